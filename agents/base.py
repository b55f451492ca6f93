"""What every agent module shares: the `Session` record and helpers for reading native stores.

An agent module (`agents/<name>.py`) is this small interface, and nothing else is needed to add
an agent:

    NAME = "claude"          # short name: file names, listings, --agent
    PREFIX = "cl"            # short-id prefix
    ATIF_NAME = "claude-code"  # agent.name in the ATIF document

    def sources(env) -> Iterable[str]
        Paths that may hold sessions (files or databases), found without opening them.
    def scan(source, env) -> list[Session]
        Cheap metadata for the sessions in one source: id, start, cwd, first message, reading
        only the head of a file (or one query of a database).
    def translate(session, env) -> dict
        The full ATIF document (use atif.build.TrajectoryBuilder).

Optional: `dependencies(source, env) -> list[str]`, every file whose change changes the
sessions of `source` or their translation (side files, sub-agent transcripts, a database's
-wal); `VERSION`, bumped when a translation changes, which invalidates cached documents;
`STORES_IN_PROJECTS = True` for a store kept inside the projects themselves (found through
`agents/projects.py`): discovery then lists it after every other agent and calls
`sources(env, session_dirs)` with the working directories of the sessions it found, so that
those projects are looked into on the same run.

Conventions every translator follows, so that one jq filter works on every agent:
- `user` steps are what the human typed. Text the harness injected (system prompts, reminders,
  environment context, slash-command output, hook feedback) is a `system` step whose
  `extra.kind` names it.
- One `agent` step per model inference (`llm_call_count: 1`), with `model_name`, the text as
  `message`, reasoning as `reasoning_content`, its tool calls, and their results joined to it
  (`TrajectoryBuilder.tool_result`). A failed tool result carries `extra.is_error: true`
  (and `extra.exit_code` when known).
- Metrics: `prompt_tokens` counts every input token, cached ones included; `cached_tokens` the
  cache reads among them; `completion_tokens` every output token (reasoning included). Other
  counts (cache writes, reasoning tokens) go to `metrics.extra`. Count a native usage record once.
- Timestamps through `iso()`; session start through `epoch()`; never the translation time.
- Sub-agents are embedded (`TrajectoryBuilder.embed`) and referenced from the spawning call's
  result.
- What cannot be read is skipped with a warning (`TrajectoryBuilder.warn`), never an exception
  for bad data: a truncated or malformed session yields what could be read.
- `Session.extra["format"]` names the native format variant (e.g. "jsonl", "legacy-json"): the
  health report (`trajectoriz agents`) counts them.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from atif.build import image_part, plain_or_parts, text_part
from atif.serialize import loads

HEAD_BYTES = 256 * 1024


@dataclass(slots=True)
class Session:
    agent: str
    native_id: str
    source: str
    started: float | None = None      # epoch seconds of the first record
    cwd: str | None = None
    title: str = ""                   # the first user message
    model: str | None = None
    locator: str | None = None        # where in `source` the session lives, if it shares it
    extra: dict = field(default_factory=dict)
    short_id: str = ""                # assigned by the catalog, unique in the listing

    def to_cache(self) -> list:
        data = asdict(self)
        del data["short_id"]
        return list(data.values())

    @classmethod
    def from_cache(cls, values: list) -> "Session":
        return cls(*values)


def home(env) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def env_dir(env, variable: str, *default: str) -> str:
    """`$variable` if set, else `$HOME/<default...>`."""
    value = env.get(variable)
    return value if value else os.path.join(home(env), *default)


def listdir(path: str) -> list[str]:
    """The sorted names in a directory; none when it is missing or unreadable."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def mtime(path: str) -> float | None:
    """When a file was last written; None when it cannot be read."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


_listings: dict = {}  # folder -> (mtime_ns, names)


def listdir_cached(path: str) -> list[str]:
    """`listdir`, asked of the file system once per change of the folder (its mtime): for a
    folder that many sources look into during one discovery (Gemini's chats/)."""
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return []
    found = _listings.get(path)
    if found is None or found[0] != mtime:
        found = (mtime, listdir(path))
        _listings[path] = found
    return found[1]


def unique_files(paths):
    """The paths that are existing files, each real file once (in the order given)."""
    seen = set()
    for path in paths:
        if os.path.isfile(path):
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                yield path


# timestamps -------------------------------------------------------------------------------------
_ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")


def epoch(value) -> float | None:
    """Seconds since the epoch from whatever a store wrote: ISO 8601 (naive means local time),
    or a number in seconds, milliseconds, microseconds or nanoseconds."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        if number != number or number <= 0:
            return None
        while number > 1e11:  # ms, us, ns -> s
            number /= 1000.0
        return number
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.isdigit():
            return epoch(int(text))
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed.timestamp()
    return None


def iso(value) -> str | None:
    """An RFC 3339 UTC timestamp (`2026-06-10T08:01:02.345Z`) from any `epoch()` input."""
    if isinstance(value, str) and _ISO_Z.match(value):
        return value
    seconds = epoch(value)
    if seconds is None:
        return None
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# reading files ----------------------------------------------------------------------------------
def open_binary(path: str):
    """A binary file object; `.zst` files are decompressed as they are read. Only regular files
    are opened: a FIFO or a device named like a session would block or never end."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    handle = os.fdopen(fd, "rb")
    if not path.endswith(".zst"):
        return handle
    return io.BufferedReader(_ZstdStream(handle))


class _ZstdStream(io.RawIOBase):
    """The decompressed bytes of a `.zst` file, frame after frame. A file cut short raises
    EOFError once its complete part is read (zstandard's own stream reader ends quietly there,
    which would pass a truncated archive off as a complete session)."""

    CHUNK = 256 * 1024

    def __init__(self, handle):
        import zstandard  # only archived Codex sessions need it

        self._new = zstandard.ZstdDecompressor().decompressobj
        self._handle = handle
        self._frame = self._new()
        self._started = False      # bytes of the current frame were fed
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            if not self._refill():
                return 0
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def _refill(self) -> bool:
        """Decompress more; False at the clean end of the file."""
        if self._frame.eof:
            rest = self._frame.unused_data
            self._frame, self._started = self._new(), False
            if rest:
                self._feed(rest)
                return True
        chunk = self._handle.read(self.CHUNK)
        if not chunk:
            if self._started:
                raise EOFError("the compressed file is cut short (its last zstd frame is incomplete)")
            return False
        self._feed(chunk)
        return True

    def _feed(self, data: bytes) -> None:
        self._started = True
        self._pending += self._frame.decompress(data)

    def close(self) -> None:
        self._handle.close()
        super().close()


def head_records(path: str, limit: int = HEAD_BYTES):
    """Parsed JSON records from the first `limit` bytes of a JSONL file, skipping bad lines.
    For discovery: never reads a whole session."""
    with open_binary(path) as handle:
        data = handle.read(limit)
    lines = data.split(b"\n")
    if len(data) >= limit:
        lines.pop()  # cut mid-line
    for line in lines:
        if line.strip():
            try:
                record = loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


class JsonlReader:
    """Iterate the records of a JSONL file, counting what could not be read instead of failing.

    `problems()` afterwards gives warnings fit for a document's `extra` (malformed lines, a
    truncated last line, records that are not objects)."""

    def __init__(self, path: str):
        self.path = path
        self.bad_lines: list[int] = []
        self.first_error = ""
        self.non_objects = 0
        self.truncated = False

    def __iter__(self):
        with open_binary(self.path) as handle:
            number = 0
            for line in handle:
                number += 1
                if not line.strip():
                    continue
                try:
                    record = loads(line)
                except ValueError as exc:
                    if not line.endswith(b"\n"):
                        self.truncated = True
                    else:
                        self.bad_lines.append(number)
                        self.first_error = self.first_error or str(exc)[:120]
                    continue
                if isinstance(record, dict):
                    yield record
                else:
                    self.non_objects += 1

    def problems(self) -> list[str]:
        found = []
        if self.bad_lines:
            found.append(f"{len(self.bad_lines)} malformed line(s) skipped, first at line "
                         f"{self.bad_lines[0]}: {self.first_error}")
        if self.truncated:
            found.append("the last line is incomplete (truncated, or still being written); it was skipped")
        if self.non_objects:
            found.append(f"{self.non_objects} line(s) that are not JSON objects skipped")
        return found


def read_json_object(path: str) -> dict:
    """A small side file (settings, state, index) as a dict; {} when missing or unreadable."""
    try:
        with open(path, "rb") as handle:
            found = loads(handle.read())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def read_json_document(path: str) -> tuple[dict, list[str]]:
    """A whole-file JSON object (Amp threads, mini-swe-agent trajectories) and the problems met.
    A file cut short (a crash mid-write) keeps its complete top-level members, and the complete
    items of the array it was cut in (`salvage_json_object`)."""
    with open_binary(path) as handle:
        data = handle.read()
    if not data.strip():
        return {}, ["the file is empty"]
    try:
        found = loads(data)
    except ValueError as exc:
        salvaged = salvage_json_object(data.decode("utf-8", "replace"))
        problem = f"the file is not complete JSON, its complete parts were read: {str(exc)[:80]}"
        return salvaged, [problem]
    if not isinstance(found, dict):
        return {}, ["the file is not a JSON object"]
    return found, []


def salvage_json_object(text: str) -> dict:
    """The complete top-level members of a truncated JSON object; for the member the cut falls
    in, when it is an array, its complete items."""
    decoder = json.JSONDecoder()
    found: dict = {}
    position = _skip(text, 0, "")
    if not text.startswith("{", position):
        return found
    position += 1
    while True:
        position = _skip(text, position, ",")
        try:
            key, position = decoder.raw_decode(text, position)
        except ValueError:
            return found
        position = _skip(text, position, "")
        if not isinstance(key, str) or not text.startswith(":", position):
            return found
        position = _skip(text, position + 1, "")
        try:
            found[key], position = decoder.raw_decode(text, position)
        except ValueError:
            if text.startswith("[", position):
                found[key] = _complete_items(text, position + 1, decoder)
            return found


def _complete_items(text: str, position: int, decoder) -> list:
    items = []
    while True:
        position = _skip(text, position, ",")
        if position >= len(text) or text[position] == "]":
            return items
        try:
            item, position = decoder.raw_decode(text, position)
        except ValueError:
            return items
        items.append(item)


def _skip(text: str, position: int, also: str) -> int:
    while position < len(text) and (text[position].isspace() or text[position] in also):
        position += 1
    return position


# content helpers --------------------------------------------------------------------------------
def text_of(content, sep: str = "\n") -> str:
    """Plain text from the usual content shapes: a string, a list of blocks with `text`, or a
    block. Non-text blocks are skipped."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        value = content.get("text")
        if isinstance(value, str):
            return value
        return text_of(content.get("content"), sep) if "content" in content else ""
    if isinstance(content, list):
        return sep.join(t for t in (text_of(item, sep) for item in content) if t)
    return str(content)


def one_line(text: str, limit: int = 200) -> str:
    """A first message fit for a listing: whitespace collapsed, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def json_arguments(raw):
    """Tool-call arguments recorded as a JSON string (OpenAI style): the parsed value, `{}` for
    an empty string, `{"input": raw}` for text that is not JSON; anything else as it is."""
    if not isinstance(raw, str):
        return raw
    if not raw.strip():
        return {}
    try:
        return loads(raw)
    except ValueError:
        return {"input": raw}


def chat_content(content):
    """OpenAI-style message content (a string, or `text` and `image_url` parts, and the
    Responses API's `input_text`, `output_text` and `input_image`) as an ATIF message: a string
    unless images are present. Other parts (Kimi's `think`) are not the message."""
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for part in as_list(content) if isinstance(content, list) else [content]:
        part = as_dict(part)
        if part.get("type") in ("text", "input_text", "output_text"):
            parts.append(text_part(as_str(part.get("text")) or ""))
        elif part.get("type") in ("image_url", "input_image"):
            parts.append(_url_image(part))
    return plain_or_parts(parts)


def _url_image(part: dict) -> dict:
    """An image part from an `image_url` (`{url}` or the URL itself): inline data or a link."""
    url = as_dict(part.get("image_url")).get("url") or part.get("image_url") or ""
    url = url if isinstance(url, str) else ""
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return image_part(media_type, data)
    return image_part("image/png" if url else None, url=url or None)


def join_result(builder, call_id: str | None, content, when=None, extra: dict | None = None,
                subagents=None, tool_name: str | None = None) -> None:
    """Attach a tool result to the step that made its call. A result whose call is not in the
    session (cut off, rewound) is kept on a system step (`extra.kind` "orphan_tool_result") with
    a warning, never dropped."""
    if builder.tool_result(call_id or "", content, extra=extra or None, subagents=subagents):
        return
    builder.warn(f"tool result for unknown call {call_id!r} kept on a system step")
    info = {"kind": "orphan_tool_result", **({"tool_name": tool_name} if tool_name else {})}
    builder.observe(builder.system("", when, extra=info), content, extra=extra or None,
                    subagents=subagents)


def connected_leaf(records: list[dict], id_key: str, parent_key: str, eligible=None) -> dict | None:
    """The leaf of a conversation whose records name their parent (`parent_key` -> `id_key`).

    A whole file is one tree. Damage makes several: a record whose parent link is missing, of
    another type, or names a record that was lost tops a tree of its own. The conversation is
    the largest tree (on a tie, the one holding the later record) and its leaf is the last
    record in it that `eligible` allows: a stray record at either end cannot take the leaf's
    place and abandon every record of the conversation. None when no record has an id."""
    by_id: dict = {}
    for record in records:
        if as_str(record.get(id_key)):
            by_id.setdefault(record[id_key], record)
    tops: dict = {}

    def top(key: str) -> str | None:
        """The first record of key's chain (None for a loop), remembered for every record met."""
        path: list = []
        on_path: set = set()
        while key not in tops:
            if key in on_path:
                found = None
                break
            path.append(key)
            on_path.add(key)
            parent = as_str(by_id[key].get(parent_key))
            if not parent or parent not in by_id:
                found = key
                break
            key = parent
        else:
            found = tops[key]
        for member in path:
            tops[member] = found
        return found

    keyed = [r for r in records if as_str(r.get(id_key))]
    candidates = [r for r in keyed if eligible is None or eligible(r)]
    if not candidates:
        return None
    size: dict = {}
    latest: dict = {}
    for index, record in enumerate(keyed):
        tree = top(record[id_key])
        if tree is not None:
            size[tree] = size.get(tree, 0) + 1
            latest[tree] = index
    if not size:
        return candidates[-1]
    main = max(size, key=lambda tree: (size[tree], latest[tree]))
    return next((r for r in reversed(candidates) if top(r[id_key]) == main), candidates[-1])


def as_int(value) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def as_dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value) -> list:
    return value if isinstance(value, list) else []


def as_str(value) -> str | None:
    return value if isinstance(value, str) else None


