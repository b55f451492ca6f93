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

Optional, to carry a session on (`trajectoriz resume` and `handoff`, commands/carryon.py): `CLI`,
a dict of argument templates of the agent's own command line, checked against the release
`CLI["checked"]`: "resume" reopens a session ({id}: its native id, {path}: its source file),
"resume_prompt" sends it one more request ({prompt}) without the interactive interface,
"start" opens a new session whose first request is {prompt}, "start_prompt" runs that request
without it. A key is missing where the CLI cannot do it.

Optional, for speed: `dependencies_of(sources, env)`, `dependencies` of many sources at once;
`APPENDS_ONLY = True` for a store that only appends to its files (a scan that read a complete
head is then settled); `outside(source, scope, memo) -> bool`, whether a source's path shows
that none of its sessions ran in the project `scope`, and `cwd_of(source)`, the working
directory its first line names (a project's first discovery leaves those sources out);
`native_id_of(source)`, the native id its file name gives (`show ID`'s first run scans only
the transcripts whose ids hash to ID).

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

Bounds. Every byte of a store is untrusted, so each reader here has a stated limit, and what
lies past it is skipped with a warning (the readers' `problems()`) while what came before is
kept; a hostile file (a zstd bomb, a line of gigabytes, a flood of records, nesting a thousand
levels deep) costs bounded memory and time:
- discovery reads a JSONL session's head (`head_records`): HEAD_BYTES (256 KiB) of lines, one
  line counting at most a quarter of that, so that a first prompt of megabytes (a pasted image)
  is read whole with the records after it; HEAD_MAX (64 MiB) in all;
- one JSONL line: LINE_LIMIT (256 MiB), a longer one read through without being kept; one
  JSONL file: RECORD_LIMIT (1,000,000) records;
- a file read whole (a JSON document, a Markdown transcript): FILE_LIMIT (512 MiB), a larger
  one is not read (`TooLarge`);
- one JSONL session file: SESSION_LIMIT (1 GiB) read, decompressed for a `.zst` file, whose
  decompression yields at most about 8 MiB per step (`_ZstdStream`: a zstd bomb is harmless);
- nesting: of a JSON value read from a store (`parse_native`), NESTING_LIMIT (200) levels of
  containers are kept, deeper ones replaced by a note: a translator may then recurse into any
  value, or print it, without exhausting the stack; `text_of` descends as far, and a truncated
  document's salvage stops at a member too deep for the parser.
"""

from __future__ import annotations

import errno
import io
import math
import os
import stat
import threading
from datetime import datetime, timezone

from atif.build import image_part, plain_or_parts, text_part
from atif.serialize import limit_depth, loads
from core import compiledre, storefs
from core.cache import home

# Bounds on what is read of a store (see the module doc).
HEAD_BYTES = 256 * 1024      # the head of a JSONL session that discovery reads (head_records)
HEAD_MAX = 64 * 1024 * 1024  # ... at most, however large its first records are
LINE_LIMIT = 256 * 1024 * 1024  # one JSONL line (JsonlReader): a longer one is skipped
LINE_PIECE = 1024 * 1024     # how much of a line is read at a time
RECORD_LIMIT = 1_000_000     # records read of one JSONL file
FILE_LIMIT = 512 * 1024 * 1024  # a file read whole (read_whole): a larger one is not read
SESSION_LIMIT = 1024 * 1024 * 1024  # bytes read of one JSONL session file (decompressed, for `.zst`)
NESTING_LIMIT = 200          # levels of containers kept of a native JSON value (parse_native)
MAX_EPOCH = 1e11             # seconds: the latest moment `epoch` gives (year 5138); larger numbers are ms, us, ns


class Session:
    """One session as discovery knows it, before any translation: what a listing prints and
    what its translation needs to find it. (A plain class: `dataclasses` costs every command
    its import.)"""

    __slots__ = ("agent", "native_id", "source", "started", "cwd", "title", "model", "locator",
                 "extra", "short_id")

    def __init__(self, agent: str, native_id: str, source: str, started: float | None = None,
                 cwd: str | None = None, title: str = "", model: str | None = None,
                 locator: str | None = None, extra: dict | None = None, short_id: str = ""):
        self.agent = agent
        self.native_id = native_id
        self.source = source
        self.started = started      # epoch seconds of the first record
        self.cwd = cwd
        self.title = title          # the first user message
        self.model = model
        self.locator = locator      # where in `source` the session lives, if it shares it
        self.extra = {} if extra is None else extra
        self.short_id = short_id    # assigned by the catalog, unique in the listing

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        return self._values() == other._values() if type(other) is Session else NotImplemented

    __hash__ = None  # mutable, compared by value

    def __repr__(self) -> str:
        return "Session(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"

    def to_cache(self) -> list:
        """The fields but the short id, as the caches keep them (`extra` copied one level)."""
        return self.written(dict(self.extra))

    def written(self, extra: dict, *more) -> list:
        """`to_cache`'s fields with `extra` as given, then `more`: a record serialized at once
        needs no copy (a first listing of 40,000 sessions writes 40,000 of them)."""
        return [self.agent, self.native_id, self.source, self.started, self.cwd, self.title,
                self.model, self.locator, extra, *more]

    @classmethod
    def from_cache(cls, values: list) -> "Session":
        return cls(*values)


def env_dir(env, variable: str, *default: str) -> str:
    """`$variable` if set, else `$HOME/<default...>`."""
    value = env.get(variable)
    return value if value else os.path.join(home(env), *default)


def listdir(path: str) -> list[str]:
    """The sorted names in a directory; none when it is missing or unreadable."""
    try:
        return sorted(storefs.listdir(path))
    except OSError:
        return []


class _Reading(threading.local):
    """What the scan running in this thread read: `open_ended` once it read a file's records
    up to its end (`head_records`) or its modification time (`mtime`), which appending to the
    file can change. A scan that read neither saw only a head a later append leaves as it is:
    discovery need not look at such a source again while its folder does not change (for the
    agents whose stores only ever append, `APPENDS_ONLY`)."""
    open_ended = False


reading = _Reading()


def mtime(path: str) -> float | None:
    """When a file was last written; None when it cannot be read."""
    reading.open_ended = True
    try:
        return storefs.stat(path).st_mtime
    except OSError:
        return None


_listings: dict = {}  # folder -> (mtime_ns, names)


def listdir_cached(path: str) -> list[str]:
    """`listdir`, asked of the file system once per change of the folder (its mtime): for a
    folder that many sources look into during one discovery (Gemini's chats/)."""
    try:
        mtime = storefs.stat(path).st_mtime_ns
    except OSError:
        return []
    found = _listings.get(path)
    if found is None or found[0] != mtime:
        found = (mtime, listdir(path))
        _listings[path] = found
    return found[1]


def visible_paths(folder: str, folders: bool = False) -> list[str]:
    """The paths of a folder's entries whose names do not start with a dot (of its folders, or
    links to folders, alone), as a glob's `*` gives them; none when it cannot be listed."""
    try:
        with storefs.scandir(folder) as entries:
            return [entry.path for entry in entries
                    if not entry.name.startswith(".") and (not folders or _is_dir(entry))]
    except OSError:
        return []


def _is_dir(entry) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a link that cannot be followed: as glob, left out
        return False


# paths as a store recorded them ---------------------------------------------------------------
_WINDOWS_ABSOLUTE = compiledre.compile(r"[A-Za-z]:[\\/]|\\\\[^\\]")


def windows_path(path) -> bool:
    """Whether a recorded path is an absolute Windows one (`C:\\Users\\…`, `c:/…`, a UNC
    `\\\\server\\share`): a session written on Windows and read here (a copied home, an archive,
    a team's shared memory). No system call here can follow it; it is the session's all the same."""
    return isinstance(path, str) and _WINDOWS_ABSOLUTE.match(path) is not None


def absolute_path(path) -> bool:
    """Whether a recorded path is absolute, in its POSIX or its Windows form (`os.path.isabs`
    knows the local form only: a Windows working directory would be none)."""
    return isinstance(path, str) and (path.startswith("/") or windows_path(path))


def base_name(path: str) -> str:
    """The last component of a recorded path, split on both separators (`C:\\x\\y.txt` -> `y.txt`)."""
    return path.rpartition("/")[2].rpartition("\\")[2]


FOLDER_NAME_LIMIT = 200  # Claude Code cuts a longer folder name (and adds a hash of the path)
_NOT_ALNUM = compiledre.compile(r"[^A-Za-z0-9]")


def outside_named_folder(folder: str, scope, memo: dict, first_cwd) -> bool:
    """Whether a store's folder named after the directory its sessions started in shows that
    none of them ran in the project of `scope` (catalog.Scope), asked once per folder (`memo`).
    Claude Code and Qwen Code name it so, every character but letters and digits a `-` (older
    releases replaced fewer: both sides are compared so reduced; a subfolder's name starts
    with its project's). A folder under another name is still read when the directory its
    first session names (`first_cwd()`) resolves into the project (one reached through a
    symlink)."""
    found = memo.get(folder)
    if found is None:
        name = _NOT_ALNUM.sub("-", os.path.basename(folder))
        found = not name.startswith(_NOT_ALNUM.sub("-", scope.project)[:FOLDER_NAME_LIMIT]) \
            and not scope.holds(first_cwd())
        memo[folder] = found
    return found


def unique_files(paths):
    """The paths that are existing files, each real file once (in the order given)."""
    seen = set()
    for path in paths:
        if storefs.isfile(path):
            real = storefs.realpath(path)
            if real not in seen:
                seen.add(real)
                yield path


# timestamps -------------------------------------------------------------------------------------
_ISO_Z = compiledre.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")


def epoch(value) -> float | None:
    """Seconds since the epoch from whatever a store wrote: ISO 8601 (naive means local time),
    or a number in seconds, milliseconds, microseconds or nanoseconds. None for anything else,
    and for a moment before 1970 or after MAX_EPOCH (infinity, an integer no float holds, year
    0001 or 9999 in a far time zone: no date can be printed of them)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an integer of hundreds of digits
            return None
        if not math.isfinite(number) or number <= 0:  # inf would be divided by 1000 forever
            return None
        while number > MAX_EPOCH:  # ms, us, ns -> s
            number /= 1000.0
        return number
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.isascii() and text.isdigit():  # "²" is a digit to str.isdigit, not to int()
            try:
                return epoch(int(text))
            except ValueError:  # more digits than int() converts
                return None
        try:
            seconds = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
        return seconds if 0 < seconds <= MAX_EPOCH else None
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
class TooLarge(ValueError):
    """A file over the bound for reading it whole (FILE_LIMIT): it was not read."""


class DecompressionLimit(EOFError):
    """A `.zst` file expands past SESSION_LIMIT: the bytes before the limit were read, the rest not."""


def open_binary(path: str):
    """A binary file object; `.zst` files are decompressed as they are read (within SESSION_LIMIT).
    Only regular files are opened: a FIFO or a device named like a session would block or never
    end."""
    if not stat.S_ISREG(storefs.stat(path).st_mode):  # before the open: opening a device is already an act
        raise OSError(errno.EINVAL, "not a regular file", path)
    fd = storefs.open_read(path, getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for one meanwhile
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    handle = os.fdopen(fd, "rb")
    if not path.endswith(".zst"):
        return handle
    return io.BufferedReader(_ZstdStream(handle), buffer_size=64 * 1024)


class _ZstdStream(io.RawIOBase):
    """The decompressed bytes of a `.zst` file, frame after frame, within two bounds.

    zstd's expansion is bounded by its format: a block of 4 bytes (an RLE block) stands for at
    most 128 KB. Fed FEED compressed bytes at a time, one decompression step yields at most
    FEED / 4 + 1 blocks, about 8 MB, however the file was made (a bomb of RLE blocks included);
    the decompressor's own window is bounded by zstandard (128 MB). In all, at most `limit`
    bytes (SESSION_LIMIT) come out; then DecompressionLimit is raised. A file cut short raises
    EOFError once its complete part is read (zstandard's own stream reader ends quietly there,
    which would pass a truncated archive off as a complete session)."""

    READ = 256 * 1024   # compressed bytes read from the file at a time
    FEED = 256          # compressed bytes per decompression step

    def __init__(self, handle, limit: int = SESSION_LIMIT):
        import zstandard  # only archived Codex sessions need it

        self._new = zstandard.ZstdDecompressor().decompressobj
        self._handle = handle
        self._frame = self._new()
        self._started = False      # bytes of the current frame were fed
        self._input, self._fed = b"", 0        # compressed bytes read, and how many were fed
        self._output, self._given = b"", 0     # decompressed bytes, and how many were returned
        self._limit = self._left = limit
        self._over = False         # the limit cut the last output

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._given >= len(self._output):
            if not self._refill():
                return 0
        count = min(len(buffer), len(self._output) - self._given)
        buffer[:count] = memoryview(self._output)[self._given:self._given + count]
        self._given += count
        return count

    def _refill(self) -> bool:
        """Decompress one step; False at the clean end of the file."""
        if self._over:
            raise DecompressionLimit(f"the decompressed size limit of {size_text(self._limit)} was "
                                     "reached; the rest was not read")
        if self._frame.eof:  # what was fed past the frame's end starts the next one
            self._fed -= len(self._frame.unused_data)
            self._frame, self._started = self._new(), False
        if self._fed >= len(self._input):
            self._input, self._fed = self._handle.read(self.READ), 0
            if not self._input:
                if self._started:
                    raise EOFError("the compressed file is cut short (its last zstd frame is incomplete)")
                return False
        piece = self._input[self._fed:self._fed + self.FEED]
        self._fed += len(piece)
        self._started = True
        self._emit(self._frame.decompress(piece))
        return True

    def _emit(self, data: bytes) -> None:
        if len(data) > self._left:
            data, self._over = data[:self._left], True
        self._left -= len(data)
        self._output, self._given = data, 0

    def close(self) -> None:
        self._handle.close()
        super().close()


def size_text(count: int) -> str:
    """A limit in the binary unit that states it exactly (`256 MiB`)."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if count >= 1 << shift and count % (1 << shift) == 0:
            return f"{count >> shift} {unit}"
    return f"{count} bytes"


def read_whole(path: str, limit: int = FILE_LIMIT) -> bytes:
    """The bytes of a file read whole (a JSON document, a Markdown transcript). A file over
    `limit` bytes raises TooLarge without being read (a `.zst` one once `limit` bytes came out)."""
    with open_binary(path) as handle:
        if not path.endswith(".zst") and os.fstat(handle.fileno()).st_size > limit:
            data = None
        else:
            data = handle.read(limit + 1)
    if data is None or len(data) > limit:
        raise TooLarge(f"{os.path.basename(path)} is over the {size_text(limit)} limit of a file read "
                       "whole; it was not read")
    return data


def head_records(path: str, limit: int = HEAD_BYTES, wanted=None):
    """Parsed JSON records from the head of a JSONL file, skipping bad lines. For discovery:
    never reads a whole session.

    The head is `limit` bytes of lines, where one line counts at most a quarter of `limit`: a
    first record of megabytes (an image pasted in the first prompt) is read whole, and the
    records after it, which may hold the model or the title, still are. At most HEAD_MAX bytes
    are read in all; a line cut there is dropped. `wanted(line)`, when given, says which lines
    are worth parsing (the scan still lacking only a model need not parse a request blob of
    tens of kilobytes that names none): the others are read, counted, and skipped."""
    budget, room = limit, HEAD_MAX
    with open_binary(path) as handle:
        lines = _Lines(handle)
        while budget > 0 and room > 0:
            line = lines.next(room)
            if not line:
                reading.open_ended = True
                return
            room -= len(line)
            budget -= min(len(line), limit // 4)
            if room == 0 and not line.endswith(b"\n"):
                return  # cut at HEAD_MAX
            record = json_record(line) if wanted is None or wanted(line) else None
            if record is not None:
                yield record


class _Lines:
    """`readline(size)` over a binary file, read CHUNK bytes at a time: a transcript's head is
    tens of lines of kilobytes, which a buffered reader's readline copies in small pieces (and
    a listing needs the first few kilobytes of most transcripts). A longer line is read in
    pieces as large as what is already pending, so that reading it copies it a few times, not
    once per piece."""

    FIRST = 4 * 1024  # a page: most transcripts' heads are in it, and the kernel reads ahead less
    CHUNK = 16 * 1024

    def __init__(self, handle):
        self._handle, self._data, self._at = handle, b"", 0
        self._chunk = self.FIRST

    def next(self, size: int) -> bytes:
        """The next line, with its newline; at most `size` bytes of it; b"" at the end."""
        while True:
            end = self._data.find(b"\n", self._at, self._at + size)
            if end >= 0 or len(self._data) - self._at >= size:
                stop = end + 1 if end >= 0 else self._at + size
                break
            pending = len(self._data) - self._at
            more = self._handle.read(max(self._chunk, min(pending, size - pending)))
            self._chunk = self.CHUNK
            if not more:
                stop = len(self._data)
                break
            self._data = self._data[self._at:] + more
            self._at = 0
        line, self._at = self._data[self._at:stop], stop
        return line


def json_record(line: bytes) -> dict | None:
    """The JSON object a line holds, None for a blank or bad line or another value."""
    if not line.strip():
        return None
    try:
        record = loads_native(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def parse_native(data: bytes | str) -> tuple:
    """(value, cut) of JSON read from a store: `loads`, with the containers nested deeper than
    NESTING_LIMIT levels replaced by a note (`cut` says whether any were). Raises ValueError
    like `loads`. Counting brackets first spares the walk for all but a few values."""
    value = loads(data)
    if len(data) > 2 * NESTING_LIMIT and _brackets(data) > NESTING_LIMIT and nested_deeper(value, NESTING_LIMIT):
        return limit_depth(value, NESTING_LIMIT), True
    return value, False


def _brackets(data: bytes | str) -> int:
    """How many `{` and `[` the text holds: fewer than NESTING_LIMIT cannot nest deeper."""
    braces, brackets = (b"{", b"[") if isinstance(data, bytes) else ("{", "[")
    count = data.count(braces)
    return count if count > NESTING_LIMIT else count + data.count(brackets)


def loads_native(data: bytes | str):
    """`parse_native`'s value."""
    return parse_native(data)[0]


def nested_deeper(value, levels: int) -> bool:
    """Whether containers nest more than `levels` deep in `value` (as `limit_depth` counts:
    `levels` 0 allows no container). A walk level by level, without recursion."""
    if not isinstance(value, (dict, list)):
        return False
    layer = [value]  # the containers at one depth
    for _ in range(levels):
        layer = [child for node in layer for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
        if not layer:
            return False
    return True


def bounded_lines(handle, limit: int = LINE_LIMIT):
    """The lines of a binary file, each with its newline; None in place of a line over `limit`
    bytes, which is read through LINE_PIECE bytes at a time and never held whole."""
    while True:
        line = handle.readline(LINE_PIECE)
        if line.endswith(b"\n") or len(line) < LINE_PIECE:  # a whole line, or the file's end
            if not line:
                return
            yield line
        else:
            yield _long_line(handle, line, limit)


def _long_line(handle, piece: bytes, limit: int) -> bytes | None:
    """The rest of a line that `piece` began: the whole line, or None when it is over `limit`
    (then read to its end, piece by piece, without keeping it)."""
    pieces, size = [], 0
    while True:
        pieces.append(piece)
        size += len(piece)
        if piece.endswith(b"\n") or len(piece) < LINE_PIECE:
            return b"".join(pieces)
        if size > limit:
            break
        piece = handle.readline(LINE_PIECE)
    pieces.clear()
    while len(piece) == LINE_PIECE and not piece.endswith(b"\n"):
        piece = handle.readline(LINE_PIECE)
    return None


class _Capped:
    """A binary file read no further than `limit` bytes: past them it reads as ended, and `cut`
    tells whether the file went on."""

    def __init__(self, handle, limit: int):
        self._handle, self._left, self.cut = handle, limit, False

    def readline(self, size: int) -> bytes:
        if self._left <= 0:
            self.cut = self.cut or bool(self._handle.peek(1))
            return b""
        line = self._handle.readline(min(size, self._left))
        self._left -= len(line)
        return line


class JsonlReader:
    """Iterate the records of a JSONL file, counting what could not be read instead of failing.

    Bounded: a line over LINE_LIMIT (256 MiB) is skipped (read through, never held), at most
    RECORD_LIMIT records and SESSION_LIMIT bytes (decompressed, for `.zst`) are read; what came
    before a limit is kept. `problems()` afterwards gives warnings fit for a document's `extra`
    (malformed lines, a truncated last line, records that are not objects, the limits met)."""

    def __init__(self, path: str, limit: int = LINE_LIMIT, records: int = RECORD_LIMIT,
                 size: int = SESSION_LIMIT):
        self.path = path
        self.limit, self.record_limit, self.size_limit = limit, records, size
        self.bad_lines = self.first_bad_line = 0
        self.first_error = ""
        self.non_objects = 0
        self.truncated = False
        self.long_lines = self.first_long_line = 0
        self.too_deep = 0          # records whose deepest containers were replaced by a note
        self.stopped = ""          # why reading stopped before the end of the file

    def __iter__(self):
        try:
            with open_binary(self.path) as handle:
                if self.path.endswith(".zst") or os.fstat(handle.fileno()).st_size <= self.size_limit:
                    yield from self._records(handle)  # (a `.zst` stream keeps to the limit itself)
                    return
                capped = _Capped(handle, self.size_limit)
                yield from self._records(capped)
                if capped.cut:
                    self.stopped = (f"the limit of {size_text(self.size_limit)} read of one session file "
                                    "was reached; the rest was not read")
        except DecompressionLimit as exc:
            self.stopped = str(exc)

    def _records(self, handle):
        count = 0
        for number, line in enumerate(bounded_lines(handle, self.limit), 1):
            if line is None:
                self.long_lines += 1
                self.first_long_line = self.first_long_line or number
                continue
            record = self._parse(number, line)
            if record is None:
                continue
            if count == self.record_limit:
                self.stopped = (f"the limit of {self.record_limit:,} records was reached at line "
                                f"{number}; the rest was not read")
                return
            count += 1
            yield record

    def _parse(self, number: int, line: bytes) -> dict | None:
        if not line.strip():
            return None
        try:
            record, cut = parse_native(line)
        except ValueError as exc:
            if not line.endswith(b"\n"):
                self.truncated = True
            else:
                self.bad_lines += 1
                self.first_bad_line = self.first_bad_line or number
                self.first_error = self.first_error or str(exc)[:120]
            return None
        self.too_deep += cut
        if isinstance(record, dict):
            return record
        self.non_objects += 1
        return None

    def problems(self) -> list[str]:
        found = []
        if self.bad_lines:
            found.append(f"{self.bad_lines} malformed line(s) skipped, first at line "
                         f"{self.first_bad_line}: {self.first_error}")
        if self.truncated and not self.stopped:  # a line a limit cut is no sign of damage
            found.append("the last line is incomplete (truncated, or still being written); it was skipped")
        if self.non_objects:
            found.append(f"{self.non_objects} line(s) that are not JSON objects skipped")
        if self.long_lines:
            found.append(f"{self.long_lines} line(s) over the {size_text(self.limit)} limit of one "
                         f"record skipped, first at line {self.first_long_line}")
        if self.too_deep:
            found.append(f"{self.too_deep} record(s) nested deeper than {NESTING_LIMIT} levels: the "
                         "deeper parts were replaced by a note")
        if self.stopped:
            found.append(self.stopped)
        return found


def read_json_object(path: str) -> dict:
    """A small side file (settings, state, index) as a dict; {} when missing, unreadable or over
    FILE_LIMIT."""
    try:
        found = loads_native(read_whole(path))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def read_json_document(path: str) -> tuple[dict, list[str]]:
    """A whole-file JSON object (Amp threads, mini-swe-agent trajectories) and the problems met.
    A file cut short (a crash mid-write) keeps its complete top-level members, and the complete
    items of the array it was cut in (`salvage_json_object`). A file over FILE_LIMIT is not read."""
    try:
        data = read_whole(path)
    except TooLarge as exc:
        return {}, [str(exc)]
    if not data.strip():
        return {}, ["the file is empty"]
    try:
        found, cut = parse_native(data)
    except ValueError as exc:
        salvaged = salvage_json_object(data.decode("utf-8", "replace"))
        problem = f"the file is not complete JSON, its complete parts were read: {str(exc)[:80]}"
        return salvaged, [problem]
    if not isinstance(found, dict):
        return {}, ["the file is not a JSON object"]
    return found, [f"parts nested deeper than {NESTING_LIMIT} levels were replaced by a note"] if cut else []


def salvage_json_object(text: str) -> dict:
    """The complete top-level members of a truncated JSON object; for the member the cut falls
    in, when it is an array, its complete items. A member nested too deeply for the parser
    ends the salvage like a damaged one; one nested deeper than NESTING_LIMIT is cut there."""
    import json  # here: a salvage is rare

    decoder = json.JSONDecoder()
    found: dict = {}
    position = _BLANK.match(text, 0).end()
    if not text.startswith("{", position):
        return found
    position += 1
    while True:
        position = _SEPARATORS.match(text, position).end()
        try:
            key, position = _decode(decoder, text, position)
        except ValueError:
            return found
        position = _BLANK.match(text, position).end()
        if not isinstance(key, str) or not text.startswith(":", position):
            return found
        position = _BLANK.match(text, position + 1).end()
        try:
            found[key], position = _decode(decoder, text, position)
        except ValueError:
            if text.startswith("[", position):
                found[key] = complete_items(text, position + 1, decoder)
            return found


def complete_items(text: str, position: int, decoder=None) -> list:
    """The complete items of a JSON array cut short, from `position` (just after its `[`)."""
    import json

    decoder = decoder or json.JSONDecoder()
    items = []
    while True:
        position = _SEPARATORS.match(text, position).end()
        if position >= len(text) or text[position] == "]":
            return items
        try:
            item, position = _decode(decoder, text, position)
        except ValueError:
            return items
        items.append(item)


def _decode(decoder, text: str, position: int):
    """`raw_decode`, with nesting too deep for it turned into the ValueError of bad JSON, and
    containers deeper than NESTING_LIMIT replaced by a note (as `parse_native` does)."""
    try:
        value, end = decoder.raw_decode(text, position)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    return (limit_depth(value, NESTING_LIMIT) if nested_deeper(value, NESTING_LIMIT) else value), end


_BLANK = compiledre.compile(r"\s*")
_SEPARATORS = compiledre.compile(r"[\s,]*")


# content helpers --------------------------------------------------------------------------------
def text_of(content, sep: str = "\n", depth: int = NESTING_LIMIT) -> str:
    """Plain text from the usual content shapes: a string, a list of blocks with `text`, or a
    block. Non-text blocks are skipped, and so is content nested deeper than `depth` levels
    (no message is; a hostile record would exhaust the stack)."""
    if content is None or depth < 0:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        value = content.get("text")
        if isinstance(value, str):
            return value
        return text_of(content.get("content"), sep, depth - 1) if "content" in content else ""
    if isinstance(content, list):
        texts = [text_of(item, sep, depth - 1) for item in content]
        return sep.join(t for t in texts if t)
    return str(content)


def between(text, opening, closing):
    """What lies between the first `opening` and the first `closing` after it, or None: the
    match of a lazy `opening(.*?)closing` regex, found in linear time (the regex retries from
    every later `opening` when `closing` is missing: quadratic on a hostile text)."""
    start = text.find(opening)
    if start < 0:
        return None
    end = text.find(closing, start + len(opening))
    return None if end < 0 else text[start + len(opening):end]


TITLE_CHARACTERS = 200  # a listing's first message, at most


def one_line(text: str, limit: int = TITLE_CHARACTERS) -> str:
    """A first message fit for a listing, before its redaction: whitespace collapsed, the first
    8 x `limit` characters after leading blanks (splitting a text of megabytes into words would
    cost an object per word), ending in `…` when cut (and without the word the window ends in:
    it may be the first part of a secret). Discovery redacts it in its session's name and cuts
    it at `limit` (`catalog.listing_title`): a cut before redaction could leave a secret too
    short to be recognized."""
    first = _NON_BLANK.search(text)
    start = first.start() if first else len(text)
    window = text[start:start + limit * 8]
    cut = len(text) - start > limit * 8
    if cut:
        window = window[: max(window.rfind(" "), window.rfind("\n"), 0)]
    flat = " ".join(window.split())
    return flat + "…" if cut else flat


_NON_BLANK = compiledre.compile(r"\S")


def json_arguments(raw):
    """Tool-call arguments recorded as a JSON string (OpenAI style): the parsed value, `{}` for
    an empty string, `{"input": raw}` for text that is not JSON; anything else as it is."""
    if not isinstance(raw, str):
        return raw
    if not raw.strip():
        return {}
    try:
        return loads_native(raw)
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
    """An image part from an `image_url` (`{url}` or the URL itself)."""
    return url_image(as_dict(part.get("image_url")).get("url") or part.get("image_url"))


def url_image(url) -> dict:
    """An image part from an image's URL: inline data (`data:<type>;base64,...`) or a link."""
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


