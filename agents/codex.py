"""OpenAI Codex CLI (also Codex Desktop and the VS Code extension): rollout files under
`${CODEX_HOME:-~/.codex}`.

Where sessions live (the rollouts are the source of truth; Codex's own SQLite thread index is
never consulted):
- `sessions/YYYY/MM/DD/rollout-<local time>-<thread uuid>.jsonl`, and `archived_sessions/`
  (flat). Archived rollouts may be compressed to `.jsonl.zst`; a plain sibling wins.
- Legacy: the early Rust CLI wrote the same paths (and, at first, `sessions/` flat) as bare
  JSONL: a SessionMeta line `{id, timestamp, instructions}`, then bare ResponseItems and
  `{"record_type": "state"}` lines. The TypeScript CLI wrote `sessions/rollout-*.json`, one JSON
  document `{session, items}`. Every format is read as the same stream of `Line`s
  `(timestamp, type, payload)`, the shape of the current `{timestamp, type, payload}` envelope.

How a rollout becomes steps:
- Codex writes most things twice: the model-facing `response_item`s and the UI-facing
  `event_msg`s. One stream is picked per turn (`Plan`): user prompts from `event_msg`
  `user_message` (the clean prompt; the `response_item` user messages also carry injected
  context), else from `item_completed` UserMessage events (0.17x), else from the response items;
  assistant text and reasoning from the response items, else from the events.
- Injected context (base instructions, developer messages, `<environment_context>`, AGENTS.md,
  ...) becomes `system` steps whose `extra.kind` names it.
- One agent step per model call. A `token_count` event closes a call and carries its usage
  (`last_token_usage`); a repeated `token_count` (same cumulative total) is the same call again.
  Reasoning or text after a tool output also starts a new call (see `Translator.agent_step`).
- A call that left nothing readable (encrypted reasoning, then an interrupt) is no step. An
  interrupted turn is one `turn_aborted` system step, though Codex records it twice (the
  `<turn_aborted>` message for the model, and the event with its reason).
- Tool calls (`function_call`, `custom_tool_call`, `local_shell_call`, `tool_search_call`,
  `web_search_call`, `image_generation_call`) are joined to their outputs by `call_id`; the
  `*_end` events add exit codes and failures.
- Forks and spawned sub-agents copy their parent's history to the top of their own file; that
  prefix is skipped (`ForkGate`), and the parent is named in the document's `extra`.
"""

from __future__ import annotations

import glob
import os
import re
from collections import Counter, namedtuple

from core import compiledre, storefs
from core.jsonlib import orjson

from agents.base import (HEAD_BYTES, JsonlReader, Session, as_dict, as_int, as_list, as_str,
                         env_dir, epoch, head_records, iso, loads_native, one_line, open_binary,
                         read_whole, reading, visible_paths)
from atif.build import image_part, metrics, plain_or_parts, text_part, TrajectoryBuilder

NAME = "codex"
PREFIX = "cx"
ATIF_NAME = "codex"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("codex", "resume", "{id}"), "resume_prompt": ("codex", "exec", "resume", "{id}", "{prompt}"),
       "start": ("codex", "{prompt}"), "start_prompt": ("codex", "exec", "{prompt}"), "checked": "0.171.0"}
VERSION = 2
APPENDS_ONLY = True  # a rollout only grows (catalog: a scan of a head that did not end stays true)

COMPACTION = {"type": "compaction", "boundary": "replace"}


# discovery --------------------------------------------------------------------------------------
def codex_home(env) -> str:
    return env_dir(env, "CODEX_HOME", ".codex")


def sources(env) -> list[str]:
    """Rollouts of the dated layout (`sessions/YYYY/MM/DD/`), the archive, the early Rust CLI's
    flat layout, then the TypeScript CLI's JSON files. Listed with scandir, not glob: a heavy
    user has a folder per day, and discovery lists them on every run."""
    sessions = os.path.join(codex_home(env), "sessions")
    days = [day for year in visible_paths(sessions, folders=True)
            for month in visible_paths(year, folders=True) for day in visible_paths(month, folders=True)]
    found = _rollout_files(days)
    found += _rollout_files([os.path.join(codex_home(env), "archived_sessions")])
    found += _rollout_files([sessions])
    found += sorted(os.path.join(sessions, name) for name in _names(sessions)
                    if name.startswith("rollout-") and name.endswith(".json"))
    return found


def _names(directory: str) -> list[str]:
    try:
        return storefs.listdir(directory)
    except OSError:
        return []


def _rollout_files(directories: list[str]) -> list[str]:
    """`rollout-*.jsonl` and `rollout-*.jsonl.zst` files of the directories, sorted; a plain
    file hides its compressed sibling."""
    plain, packed = [], []
    for directory in directories:
        for name in _names(directory):
            if name.startswith("rollout-"):
                if name.endswith(".jsonl"):
                    plain.append(os.path.join(directory, name))
                elif name.endswith(".jsonl.zst"):
                    packed.append(os.path.join(directory, name))
    known = set(plain)
    return sorted(plain + [p for p in packed if p[:-4] not in known])


def _rollouts(directory: str, name: str = "rollout-*") -> list[str]:
    """`<name>.jsonl` and `<name>.jsonl.zst` files in `directory` (glob patterns); a plain file
    hides its compressed sibling."""
    plain = storefs.glob(os.path.join(directory, name + ".jsonl"))
    known = set(plain)
    packed = [p for p in storefs.glob(os.path.join(directory, name + ".jsonl.zst")) if p[:-4] not in known]
    return sorted(plain + packed)


def find_rollout(env, thread_id: str) -> str | None:
    """The rollout file of a thread, found by the id in its name."""
    root = glob.escape(codex_home(env))
    for directory in (os.path.join(root, "sessions", "*", "*", "*"), os.path.join(root, "archived_sessions"),
                      os.path.join(root, "sessions")):
        found = _rollouts(directory, f"rollout-*{glob.escape(thread_id)}")
        if found:
            return found[0]
    return None


_UUID = compiledre.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def id_from_name(path: str) -> str:
    """The thread id in a rollout's file name, or the name itself."""
    stem = os.path.basename(path).split(".")[0]
    found = _UUID.findall(stem)
    return found[-1] if found else stem


def scan(source: str, env) -> list[Session]:
    rollout = Rollout(source)
    own = OwnLines(rollout, env, head=True)
    head = listing_head(own)
    if rollout.format == "legacy-json" or (own.gate and own.gate.parent):
        reading.open_ended = True  # rewritten whole, or its lineage depends on its parent's file
    return [Session(agent=NAME, native_id=head.session_id or id_from_name(source), source=source,
                    started=epoch(head.started), cwd=head.cwd, title=head.title, model=head.model,
                    extra={"format": rollout.format, **own.lineage()})]


META_LINE_LIMIT = 256 * 1024  # of the first line, what cwd_of reads (base instructions are long)
META_PEEK = 4096  # what cwd_of reads first: the directory comes before the instructions
_SIMPLE = rb'"\w+":(?:"[^"\\]*"|-?\d+|true|false|null),'
META_CWD = compiledre.compile(rb'\{(?:' + _SIMPLE + rb')*"type":"session_meta",(?:' + _SIMPLE + rb')*'
                              rb'"payload":\{(?:' + _SIMPLE + rb')*"cwd":("(?:[^"\\]|\\.)*")')


def cwd_of(source: str) -> str | None:
    """The working directory a rollout's first line (its session_meta) names, read alone: what
    a project's first discovery needs to leave out a rollout of another project (discovery/catalog.py).
    None when the line names none, cannot be read or (read whole) is not complete yet: the head
    is scanned. A line that begins as Codex writes it (plain keys and values, then the
    payload's, then its `cwd`) is read no further than its directory (`META_CWD`): the line is
    20 KB of instructions, whose parsing was most of the cost. A directory read so can only differ from
    the whole line's (a key given twice) in a line forged to, whose writer could name any
    directory anyway, and only to leave a session out: one named inside is scanned."""
    if source.endswith(".json"):
        return None
    try:
        with open_binary(source) as handle:
            start = handle.read(META_PEEK)
            found = META_CWD.match(start)
            if found is not None:
                cwd = loads_native(found.group(1))
                return cwd if isinstance(cwd, str) and cwd else None
            end = start.find(b"\n")
            line = start[:end + 1] if end >= 0 else start + handle.readline(META_LINE_LIMIT - len(start))
        record = loads_native(line) if line.endswith(b"\n") else None
    except Exception:  # any failure is the scan's to report
        return None
    if not isinstance(record, dict) or record.get("type") != "session_meta":
        return None
    cwd = as_dict(record.get("payload")).get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def listing_head(own: "OwnLines") -> "Head":
    """The Head of a rollout's head, read only up to the start of a turn where everything is
    known: the id, time, directory, model and title (a turn's plan depends on its own lines
    only, so the turns read give the title the whole head would). A fork's or a sub-agent's
    reads its whole head (its lineage counts the copied lines skipped)."""
    lines = []
    probe = Head([], None)
    for line in own:
        if starts_turn(line) and probe.dated and None not in (probe.session_id, probe.cwd, probe.model) \
                and not (own.gate and own.gate.parent):
            head = Head(lines, Plan(lines))
            if head.title:
                return head
        probe.see(line)
        lines.append(line)
    return Head(lines, Plan(lines))


class Head:
    """What a listing needs, from the first lines of a rollout: the first session_meta's id and
    cwd (else the first turn_context's, else the environment context's), the first timestamp,
    the first model, and the first prompt from the stream the plan picks for its turn."""

    def __init__(self, lines: list, plan: "Plan"):
        self.session_id = self.started = self.cwd = self.model = None
        self.dated = False  # whether `started` is a time
        self.title = ""
        turn = 0
        for line in lines:
            turn += starts_turn(line)
            self.see(line)
            source, prompt = prompt_of(line)
            if source and not self.title and source == plan.prompts(turn):
                self.title = one_line(title_text(prompt))

    def see(self, line: "Line") -> None:
        payload = line.payload
        if not self.dated:  # (parsing the time again on every line cost a third of a scan)
            self.started = line.timestamp or (payload.get("timestamp") if line.type == "session_meta" else None)
            self.dated = epoch(self.started) is not None
        if line.type == "session_meta" and self.session_id is None:
            self.session_id = as_str(payload.get("id"))
            self.cwd = self.cwd or as_str(payload.get("cwd"))
        elif line.type == "turn_context":
            self.cwd = self.cwd or as_str(payload.get("cwd"))
            self.model = self.model or as_str(payload.get("model"))
        elif line.type == "response_item" and payload.get("role") == "user" and self.cwd is None:
            self.cwd = cwd_in_context(message_text(payload))


def title_text(prompt: str | list) -> str:
    if isinstance(prompt, str):
        return prompt
    return " ".join(p.get("text", "[image]") for p in prompt)


# reading ----------------------------------------------------------------------------------------
class Line(namedtuple("Line", "timestamp type payload")):
    """One rollout record in the current envelope's shape."""
    __slots__ = ()


class Rollout:
    """The records of one rollout file as `Line`s, whatever its format (see the module doc)."""

    def __init__(self, path: str):
        self.path = path
        self.format = "legacy-json" if path.endswith(".json") else "jsonl"
        self.problems: list[str] = []
        self.unrecognized: Counter = Counter()

    def lines(self, head: bool = False):
        """Every line, or those of the first `HEAD_BYTES` (a legacy JSON document, small and
        rare, is always read whole)."""
        if self.format == "legacy-json":
            yield from self._document_lines()
            return
        first = True
        for record in self._records(head):
            line = self._line(record, first)
            first = False
            if line is not None:
                yield line

    def _line(self, record: dict, first: bool) -> Line | None:
        kind = record.get("type")
        timestamp = as_str(record.get("timestamp"))
        if isinstance(kind, str) and "payload" in record:
            return Line(timestamp, kind, typed_item(kind, as_dict(record["payload"])))
        if first:
            self.format = "legacy-jsonl"
            if "id" in record and "type" not in record:
                return Line(timestamp, "session_meta", record)
        if record.get("record_type") == "state":
            return None
        if isinstance(kind, str) or isinstance(record.get("role"), str):
            if "content" not in record and "message" in record:  # a bare chat message
                record = {**record, "content": record["message"]}
            return Line(timestamp or as_str(record.get("created_at")), "response_item",
                        typed_item("response_item", record))
        self.unrecognized["(record without a type)"] += 1
        return None

    def _records(self, head: bool):
        reader = JsonlReader(self.path)
        try:
            yield from head_records(self.path, HEAD_BYTES, listing_lines()) if head else reader
        except Exception as exc:  # zstandard's error has no narrower common base: _is_read_error
            if not _is_read_error(exc):
                raise
            self.problems.append(f"reading stopped early: {type(exc).__name__}: {exc}")
        self.problems.extend(reader.problems())

    def _document_lines(self):
        """The TypeScript CLI's `{session, items}` document."""
        try:
            doc = loads_native(read_whole(self.path))
        except (OSError, ValueError) as exc:
            self.problems.append(f"not a readable JSON document: {str(exc)[:120]}")
            return
        meta = as_dict(as_dict(doc).get("session"))
        yield Line(as_str(meta.get("timestamp")), "session_meta", meta)
        for item in as_list(as_dict(doc).get("items")):
            if isinstance(item, dict):
                yield Line(None, "response_item", item)


LINEAGE_MARKS = (b"forked_from_id", b"parent_thread_id", b"subagent")


def has_head_mark(line: bytes) -> bool:
    """Whether a line can hold a turn's start, the id, directory, model or a prompt. Spelled out:
    a generator over the marks costs a fifth more, and one regular expression (which has no
    fast scan for several words) two thirds more."""
    return (b"_started" in line or b"session_meta" in line or b"turn_context" in line
            or b'"user"' in line or b"user_message" in line or b"UserMessage" in line)


def listing_lines():
    """Which lines of a head `listing_head` parses (head_records' `wanted`): the first one, and
    those that can hold a turn's start, the id, directory, model or a prompt (most of a first
    turn is tool calls, reasoning and usage, which a listing never looks at: parsing them was
    three quarters of a scan). A fork's or a sub-agent's head is parsed whole: its lineage
    counts the copied lines it skips."""
    state = {"first": True, "whole": False}

    def wanted(line: bytes) -> bool:
        if state["first"]:
            state["first"] = False
            state["whole"] = any(mark in line for mark in LINEAGE_MARKS)
            return True
        return state["whole"] or has_head_mark(line)
    return wanted


def typed_item(kind: str, payload: dict) -> dict:
    """A response item; a message written without its `type` (some older writers) gets one."""
    if kind == "response_item" and "type" not in payload and isinstance(payload.get("role"), str):
        return {"type": "message", **payload}
    return payload


def _is_read_error(exc: Exception) -> bool:
    """I/O and decompression failures (zstandard's error shares no base class with OSError)."""
    return isinstance(exc, (OSError, EOFError)) or type(exc).__name__ == "ZstdError"


def turn_id_of(line: Line) -> str | None:
    if line.type == "turn_context" or (line.type == "event_msg" and
                                        line.payload.get("type") in ("task_started", "turn_started")):
        return as_str(line.payload.get("turn_id"))
    return None


_parent_turns_cache: dict = {}


def parent_turns(path: str) -> set[str]:
    """Every turn id a rollout holds (memoised per file version: many sub-agents share a parent)."""
    try:
        st = storefs.stat(path)
    except OSError:
        return set()
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _parent_turns_cache:
        turns = {t for t in map(turn_id_of, Rollout(path).lines()) if t}
        _parent_turns_cache.clear()  # one parent at a time is enough to serve its children
        _parent_turns_cache[key] = turns
    return _parent_turns_cache[key]


class OwnLines:
    """The lines of a rollout minus the parent history a fork or sub-agent copied into it."""

    def __init__(self, rollout: Rollout, env, head: bool = False):
        self.rollout, self.env, self.head = rollout, env, head
        self.gate: ForkGate | None = None

    def __iter__(self):
        for line in self.rollout.lines(self.head):
            if line.type == "session_meta" and self.gate is None:
                self.gate = ForkGate(line.payload, self.env)
            elif self.gate is not None and not self.gate.admits(line):
                continue
            yield line

    def lineage(self) -> dict:
        return self.gate.lineage() if self.gate else {}

    def warning(self) -> str | None:
        return self.gate.warning() if self.gate else None


class ForkGate:
    """Drops the parent history a fork or a spawned sub-agent copies to the top of its rollout.

    A fork (`forked_from_id`) starts copying right after its own session_meta; a sub-agent
    (`source.subagent.thread_spawn.parent_thread_id`, or `thread_source: "subagent"` with
    `parent_thread_id`) copies nothing unless a copy of the parent's session_meta follows. The
    copy ends at the first turn id (turn_context or task_started) that the parent's own rollout
    does not hold. Without the parent's rollout the boundary is unknown: everything is kept, and
    the document says so."""

    def __init__(self, meta: dict, env):
        self.env = env
        self.forked_from = as_str(meta.get("forked_from_id"))
        self.parent = self.forked_from or subagent_parent(meta)
        self.skipping = False
        self.parent_found: bool | None = None
        self.skipped = 0
        self._turns: set = set()
        if self.forked_from:
            self._start()

    def _start(self) -> None:
        path = find_rollout(self.env, self.parent)
        self._turns = parent_turns(path) if path else set()
        self.parent_found = bool(self._turns)
        self.skipping = self.parent_found

    def admits(self, line: Line) -> bool:
        if (not self.skipping and self.parent_found is None and line.type == "session_meta"
                and self.parent and line.payload.get("id") == self.parent):
            self._start()
        if not self.skipping:
            return True
        turn = turn_id_of(line)
        if turn and turn not in self._turns:
            self.skipping = False
            return True
        self.skipped += 1
        return False

    def lineage(self) -> dict:
        if not self.parent:
            return {}
        found = {"parent_session_id": self.parent, "relationship": "fork" if self.forked_from else "subagent"}
        if self.skipped:
            found["copied_parent_lines_skipped"] = self.skipped
        return found

    def warning(self) -> str | None:
        if self.parent_found is False:
            return (f"the parent rollout {self.parent} was not found: lines copied from it cannot be "
                    "told apart and are kept")
        if self.skipping:
            return "the whole rollout is a copy of its parent's history: nothing of its own was recorded"
        return None


def subagent_parent(meta: dict) -> str | None:
    source = as_dict(meta.get("source"))
    spawn = as_dict(as_dict(source.get("subagent")).get("thread_spawn"))
    parent = as_str(spawn.get("parent_thread_id"))
    if not parent and ("subagent" in source or meta.get("thread_source") == "subagent"):
        parent = as_str(meta.get("parent_thread_id"))
    return parent or None


# content ----------------------------------------------------------------------------------------
_TAG = compiledre.compile(r"^<([A-Za-z][\w\- ]*)>")
_CWD = compiledre.compile(r"<cwd>([^<]+)</cwd>")


def injected_kind(text: str) -> str | None:
    """What the harness injected into a user-role message (None for a human's prompt): a block
    wrapped whole in one tag (`<environment_context>…</environment_context>`), or AGENTS.md."""
    stripped = text.strip()
    if stripped.startswith("# AGENTS.md instructions"):
        return "agents_md"
    tag = _TAG.match(stripped)
    if tag and stripped.endswith(f"</{tag.group(1)}>"):
        return re.sub(r"[\s\-]+", "_", tag.group(1)).lower()
    return None


def message_kind(payload: dict) -> str | None:
    """The injected kind of a user message when every text block in it is injected."""
    texts = [t for t in (block_text(b) for b in as_list(payload.get("content"))) if t]
    if isinstance(payload.get("content"), str):
        texts = [payload["content"]]
    kinds = [injected_kind(t) for t in texts]
    return kinds[0] if kinds and all(kinds) else None


def cwd_in_context(text: str) -> str | None:
    found = _CWD.search(text) if "<environment_context>" in text else None
    return found.group(1).strip() if found else None


def block_text(block) -> str | None:
    if isinstance(block, str):
        return block
    block = as_dict(block)
    return as_str(block.get("text")) or as_str(block.get("refusal"))


def message_text(payload: dict) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(t for t in (block_text(b) for b in as_list(content)) if t)


_DATA_URL = compiledre.compile(r"^data:([\w/+.-]+);base64,", re.S)
_EXTENSIONS = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}


def image_from(url) -> dict:
    """An image part from a data URL, a URL or a local path."""
    if not isinstance(url, str) or not url:
        return text_part("[image]")
    data = _DATA_URL.match(url)
    if data:
        return image_part(data.group(1), data=url[data.end():])
    return image_part(_EXTENSIONS.get(os.path.splitext(url.split("?")[0])[1].lower()), url=url,
                      label=f"image {url}")


def content_of(blocks) -> str | list:
    """Text, or text and image parts, from Codex content items (`input_text`, `output_text`,
    `input_image`, `text`, `image`, `localImage`, ...)."""
    if isinstance(blocks, str):
        return blocks
    if isinstance(blocks, dict):
        blocks = [blocks]
    parts = []
    for block in as_list(blocks):
        text = block_text(block)
        kind = str(as_dict(block).get("type", "")).lower()
        if text is not None:
            parts.append(text_part(text))
        elif "image" in kind:
            block = as_dict(block)
            parts.append(image_from(block.get("image_url") or block.get("url") or block.get("path")))
    return plain_or_parts(parts)



def prompt_content(text: str, images=(), local_images=()) -> str | list:
    parts = [text_part(text)] if text else []
    parts += [image_from(u) for u in as_list(images)] + [image_from(p) for p in as_list(local_images)]
    return plain_or_parts(parts)


PROMPT_SOURCES = ("event", "item", "response")


def prompt_of(line: Line) -> tuple[str | None, str | list | None]:
    """(source, prompt) when the line holds what the human typed, by each of the three sources."""
    payload, kind = line.payload, line.payload.get("type")
    if line.type == "event_msg" and kind == "user_message" and payload.get("kind") in (None, "plain"):
        return "event", prompt_content(as_str(payload.get("message")) or "", payload.get("images"),
                                       payload.get("local_images"))
    if line.type == "event_msg" and kind == "item_completed":
        item = as_dict(payload.get("item"))
        if item.get("type") == "UserMessage":
            return "item", content_of(item.get("content"))
    if line.type == "response_item" and kind == "message" and payload.get("role") == "user":
        if message_kind(payload) is None:
            return "response", content_of(payload.get("content"))
    return None, None


def reasoning_text(payload: dict) -> str:
    """Raw reasoning when recorded (open models), else the summary; encrypted reasoning is
    unreadable."""
    raw = "\n".join(t for t in (block_text(b) for b in as_list(payload.get("content"))) if t)
    summary = "\n".join(t for t in (block_text(b) for b in as_list(payload.get("summary"))) if t)
    return raw or summary


def parse_arguments(raw):
    if isinstance(raw, str):
        try:
            return loads_native(raw)
        except ValueError:
            return {"input": raw}
    return raw


_EXIT_LINE = compiledre.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$", re.M)
EXIT_LINE_SPAN = 5  # the header lines of shell output where Codex states the exit code


def tool_output(raw) -> tuple[str | list, dict]:
    """(content, extra) of a tool output: a string, content items, a `{content, success}` object,
    or the older JSON string `{"output": ..., "metadata": {"exit_code": ...}}`."""
    extra: dict = {}
    if isinstance(raw, str):
        if raw.startswith("{") and '"metadata"' in raw:
            try:
                parsed = as_dict(loads_native(raw))
            except ValueError:
                parsed = {}
            if isinstance(parsed.get("output"), str):
                code = as_int(as_dict(parsed.get("metadata")).get("exit_code"))
                return parsed["output"], exit_extra(code)
        found = _EXIT_LINE.search("\n".join(raw.split("\n", EXIT_LINE_SPAN)[:EXIT_LINE_SPAN]))
        return raw, exit_extra(int(found.group(1))) if found else extra
    if isinstance(raw, dict) and "content" in raw and "type" not in raw:
        content, extra = tool_output(raw["content"])
        if raw.get("success") is False:
            extra = {**extra, "is_error": True}
        return content, extra
    return content_of(raw), extra


def exit_extra(code: int | None) -> dict:
    if code is None:
        return {}
    return {"exit_code": code, "is_error": True} if code != 0 else {"exit_code": code}


# what the UI events add to tool results -----------------------------------------------------------
def outcome(payload: dict) -> tuple[str | None, dict]:
    """(call_id, result extra) from the events that report how a tool call ended."""
    kind = payload.get("type")
    if kind == "item_completed":
        return item_outcome(as_dict(payload.get("item")))
    call_id = as_str(payload.get("call_id"))
    if kind == "exec_command_end":
        return call_id, exit_extra(as_int(payload.get("exit_code")))
    if kind == "patch_apply_end":
        return call_id, {"is_error": True} if payload.get("success") is False else {}
    if kind == "mcp_tool_call_end":
        result = as_dict(payload.get("result"))
        failed = "Err" in result or as_dict(result.get("Ok")).get("isError") is True
        return call_id, {"is_error": True} if failed else {}
    if kind == "dynamic_tool_call_response":
        return call_id, {"is_error": True} if payload.get("success") is False else {}
    if kind == "collab_agent_spawn_end":
        found = {"subagent_session_id": as_str(payload.get("new_thread_id")),
                 "subagent_nickname": as_str(payload.get("new_agent_nickname")),
                 "subagent_role": as_str(payload.get("new_agent_role"))}
        return call_id, {k: v for k, v in found.items() if v}
    if kind == "sub_agent_activity" and payload.get("kind") == "started":
        thread = as_str(payload.get("agent_thread_id"))
        return as_str(payload.get("event_id")), {"subagent_session_id": thread} if thread else {}
    return None, {}


def item_outcome(item: dict) -> tuple[str | None, dict]:
    call_id, kind, status = as_str(item.get("id")), item.get("type"), item.get("status")
    failed = status in ("failed", "declined")
    if kind == "CommandExecution":
        found = exit_extra(as_int(item.get("exit_code")))
        return call_id, {**found, "is_error": True} if failed else found
    if kind in ("FileChange", "McpToolCall"):
        failed = failed or as_dict(item.get("result")).get("isError") is True
        return call_id, {"is_error": True} if failed else {}
    return None, {}


# tokens -----------------------------------------------------------------------------------------
def usage_numbers(usage: dict) -> dict | None:
    """prompt (cached included), cached, completion and extra counts from one usage record in
    any of the shapes Codex wrote (`input_tokens`..., or the 0.50-era `prompt`/`completion`)."""
    prompt = first_int(usage, "input_tokens", "prompt_tokens", "prompt")
    completion = first_int(usage, "output_tokens", "completion_tokens", "completion")
    if not prompt and not completion:
        return None
    extra = {k: usage[k] for k in ("reasoning_output_tokens", "cache_write_input_tokens")
             if as_int(usage.get(k)) is not None}
    return {"prompt": prompt, "completion": completion,
            "cached": first_int(usage, "cached_input_tokens", "cache_read_input_tokens"), "extra": extra}


def first_int(data: dict, *keys: str) -> int | None:
    for key in keys:
        value = as_int(data.get(key))
        if value is not None:
            return value
    return None


def usage_delta(total: dict, previous: dict | None) -> dict:
    previous = previous or {}
    return {k: v - (as_int(previous.get(k)) or 0) for k, v in total.items() if as_int(v) is not None}


class TokenCounter:
    """The usage of each model call from `token_count` events, counted once: an event whose
    cumulative total equals the previous one repeats the previous call (rate-limit updates)."""

    def __init__(self):
        self.last_total: dict | None = None

    def usage(self, payload: dict) -> dict | None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return usage_numbers(payload) if "input_tokens" in payload else None
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if isinstance(total, dict):
            if total == self.last_total:
                return None
            previous, self.last_total = self.last_total, total
            if not isinstance(last, dict):
                last = usage_delta(total, previous)
        return usage_numbers(last if isinstance(last, dict) else info)


# the plan: choices made over a whole file before translating it ---------------------------------
def starts_turn(line: Line) -> bool:
    return line.type == "event_msg" and line.payload.get("type") in ("task_started", "turn_started")


class Plan:
    """Which stream supplies the prompts, text and reasoning of each turn (a resumed session can
    mix Codex versions), whether usage events mark the model calls, and how each tool call ended
    (from events that may come before or after its output). Turns are counted from 1 at each
    `task_started`; lines before the first one are turn 0."""

    def __init__(self, lines):
        self.turns: list[set] = [set()]
        self.outcomes: dict[str, dict] = {}
        self.usage_events = False
        tokens = TokenCounter()
        for line in lines:
            if starts_turn(line):
                self.turns.append(set())
            self.see(line, self.turns[-1], tokens)

    def see(self, line: Line, seen: set, tokens: TokenCounter) -> None:
        payload, kind = line.payload, line.payload.get("type")
        source, _ = prompt_of(line)
        if source:
            seen.add(source)
        if line.type == "response_item" and kind == "message" and payload.get("role") == "assistant":
            seen.add("response_text")
        elif line.type == "response_item" and kind == "reasoning" and reasoning_text(payload):
            seen.add("response_reasoning")
        elif line.type == "event_msg" and kind == "token_count" and tokens.usage(payload):
            self.usage_events = True
        elif line.type == "event_msg":
            call_id, found = outcome(payload)
            if call_id and found:
                self.outcomes.setdefault(call_id, {}).update(found)

    def prompts(self, turn: int) -> str:
        return next((s for s in PROMPT_SOURCES if s in self.turns[turn]), "response")

    def text(self, turn: int) -> str:
        return "response" if "response_text" in self.turns[turn] else "event"

    def reasoning(self, turn: int) -> str:
        return "response" if "response_reasoning" in self.turns[turn] else "event"


# translation ------------------------------------------------------------------------------------
TURN_EVENTS = ("task_started", "turn_started", "task_complete", "turn_complete")
QUIET_EVENTS = {  # duplicates of the response items, or bookkeeping that adds nothing to a step
    "agent_message_delta", "agent_reasoning_delta", "agent_reasoning_section_break",
    "exec_command_begin", "exec_command_end", "exec_command_output_delta", "patch_apply_begin",
    "patch_apply_end", "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin",
    "collab_agent_spawn_begin", "collab_agent_spawn_end", "collab_waiting_begin", "collab_waiting_end",
    "collab_close_begin", "collab_close_end", "collab_agent_interaction_begin",
    "collab_agent_interaction_end", "sub_agent_activity", "guardian_assessment",
    "dynamic_tool_call_request", "dynamic_tool_call_response", "view_image_tool_call",
    "image_generation_begin", "image_generation_end", "thread_settings_applied", "thread_goal_updated",
    "item_started", "plan_update", "session_configured", "mcp_startup_complete",
    "background_event", "stream_error", "warning", "account/rateLimits/updated", "codex/event/raw_item",
    "turn_diff", "get_history_entry_response", "list_custom_prompts_response", "shutdown_complete",
    "deprecation_notice", "agent_reasoning_raw_content_delta"}
QUIET_TYPES = {"world_state", "token_usage_record", "inter_agent_communication_metadata"}


KEEP_BYTES = 16 * 1024 * 1024  # rollouts parsed once (their lines take about 10x this in memory)


def translate(session: Session, env) -> dict:
    return Translator(session, env).run()


def _file_size(path: str) -> int:
    try:
        return storefs.getsize(path) * (8 if path.endswith(".zst") else 1)
    except OSError:
        return 0


class Translator:
    """One rollout, read line by line into a TrajectoryBuilder (see the module doc)."""

    def __init__(self, session: Session, env):
        self.session, self.env = session, env
        self.b = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id)
        self.meta: dict | None = None
        self.model = self.effort = None
        self.open = None                 # the agent step of the model call being read
        self.after_output = False        # a tool output came since the open step's last output
        self.unmetered: list = []        # agent steps opened since the last usage event
        self.compaction = None           # the last compaction step, while nothing follows it
        self.abort = (None, set())       # the last abort's step, and which records made it
        self.web_searches: list[str] = []
        self.tokens = TokenCounter()
        self.unrecognized: Counter = Counter()
        self.turn = 0                    # counted as in `Plan`

    def run(self) -> dict:
        """Two passes: the first makes the file-wide choices (`Plan`), the second translates. A
        rollout of up to KEEP_BYTES is parsed once and its lines kept for the second pass (the
        parse is half the work); a larger one is read twice, so that memory stays bounded."""
        rollout = Rollout(self.session.source)
        lines = OwnLines(rollout, self.env)
        if _file_size(self.session.source) <= KEEP_BYTES:
            kept = list(lines)
            self.plan = Plan(kept)
        else:
            self.plan = Plan(OwnLines(Rollout(self.session.source), self.env))
            kept = lines
        for line in kept:
            self.handle(line)
        return self.finish(rollout, lines)

    def finish(self, rollout: Rollout, lines: OwnLines) -> dict:
        self.close()
        for problem in rollout.problems:
            self.b.warn(problem)
        if lines.warning():
            self.b.warn(lines.warning())
        self.b.extra.update({"format": rollout.format, **lines.lineage()})
        unrecognized = rollout.unrecognized + self.unrecognized
        if unrecognized:
            self.b.extra["unrecognized_records"] = dict(sorted(unrecognized.items()))
        return self.b.build()

    # dispatch ------------------------------------------------------------------------------------
    def handle(self, line: Line) -> None:
        self.turn += starts_turn(line)
        if line.type == "session_meta":
            self.on_session_meta(line)
        elif line.type == "turn_context":
            self.model = as_str(line.payload.get("model")) or self.model
            self.effort = as_str(line.payload.get("effort")) or self.effort
            self.note_mode(line.payload.get("collaboration_mode"))
            self.b.model_name = self.b.model_name or self.model
        elif line.type == "response_item":
            self.on_item(line)
        elif line.type == "event_msg":
            if line.payload.get("type") in ("task_started", "turn_started"):
                self.note_mode(line.payload.get("collaboration_mode_kind"))
            self.on_event(line)
        elif line.type == "compacted":
            self.on_compacted(line)
        elif line.type not in QUIET_TYPES:
            self.unrecognized[line.type] += 1

    def on_item(self, line: Line) -> None:
        kind = as_str(line.payload.get("type"))
        handler = self.ITEM_HANDLERS.get(kind)
        if handler is not None:
            handler(self, line)
        elif kind != "ghost_snapshot":
            self.unrecognized[f"response_item:{kind}"] += 1

    def on_event(self, line: Line) -> None:
        kind = as_str(line.payload.get("type"))
        handler = self.EVENT_HANDLERS.get(kind)
        if handler is not None:
            handler(self, line)
        elif kind in TURN_EVENTS:
            self.close()
        elif kind not in QUIET_EVENTS:
            self.unrecognized[f"event_msg:{kind}"] += 1

    # steps ---------------------------------------------------------------------------------------
    def close(self) -> None:
        """The open model call ends. One that left nothing (an encrypted reasoning item, then an
        interrupt) is no step: nothing the model said or used is known of it."""
        step, self.open = self.open, None
        self.after_output = False
        if step is not None and not (step.message or step.reasoning or step.calls or step.results
                                     or step.metrics):
            self.b.discard(step)
            self.unmetered.remove(step)

    def agent_step(self, line: Line, starts_response: bool = True):
        """The agent step of the current model call, opened by its first output.

        After a tool output, reasoning or text starts a new response. A tool call may belong to
        the same response (parallel calls whose outputs were written in between): when usage
        events mark the calls, the next `token_count` decides; without them, it is a new call."""
        if self.after_output and (starts_response or not self.plan.usage_events):
            self.close()
        self.after_output = False
        if self.open is None:
            self.open = self.b.agent("", iso(line.timestamp), model_name=self.model,
                                     reasoning_effort=self.effort, llm_call_count=1)
            self.unmetered.append(self.open)
        return self.open

    def system(self, line: Line, message, kind: str, **extra):
        self.close()
        return self.b.system(message, iso(line.timestamp), extra={"kind": kind, **extra})

    def user(self, line: Line, content) -> None:
        self.close()
        self.b.user(content, iso(line.timestamp))

    def add_text(self, line: Line, text: str) -> None:
        if text:
            step = self.agent_step(line)
            step.message = f"{step.message}\n\n{text}" if step.message else text
        else:
            self.agent_step(line)

    def add_reasoning(self, line: Line, text: str) -> None:
        step = self.agent_step(line)
        if text:
            step.reasoning = f"{step.reasoning}\n\n{text}" if step.reasoning else text

    # compaction --------------------------------------------------------------------------------
    def on_compacted(self, line: Line) -> None:
        step = self.compacted(line)
        summary = as_str(line.payload.get("message"))
        if summary:
            self.b.observe(step, summary, extra={"kind": "summary"})
        for item in as_list(line.payload.get("replacement_history")):
            item = as_dict(item)
            if item.get("type") == "message":
                self.b.observe(step, content_of(item.get("content")), extra={"role": item.get("role")})

    def compacted(self, line: Line):
        """The compaction step. Codex records one compaction up to three ways (`compacted`,
        `context_compacted`, a `compaction` item); records that follow each other share a step."""
        if self.compaction is None or self.b.last_step is not self.compaction:
            self.compaction = self.system(line, "Context compacted: the history before this step was "
                                          "replaced by the content below", "compaction",
                                          context_management=COMPACTION)
        self.close()
        return self.compaction

    def note_mode(self, mode) -> None:
        """The collaboration modes the turns ran in (`plan`, `default` ...), each once, in order:
        `extra.modes`."""
        name = as_str(as_dict(mode).get("mode")) or as_str(as_dict(mode).get("kind")) or as_str(mode)
        if name and not name.startswith("["):
            found = self.b.extra.setdefault("modes", [])
            if name not in found and len(found) < 32:
                found.append(name[:40])

    # session metadata --------------------------------------------------------------------------
    def on_session_meta(self, line: Line) -> None:
        if self.meta is not None:
            return  # later session_meta lines are copies of a parent's (or a resume's) meta
        self.meta = meta = line.payload
        self.b.version = as_str(meta.get("cli_version")) or self.b.version
        self.b.agent_extra = {k: meta[k] for k in ("originator", "source", "model_provider", "git")
                              if meta.get(k) not in (None, {}, "")}
        for key in ("agent_nickname", "agent_role"):
            if as_str(meta.get(key)):
                self.b.extra[key] = meta[key]
        base = meta.get("base_instructions")
        instructions = as_dict(base).get("text") or as_str(base) or meta.get("instructions")
        if isinstance(instructions, str) and instructions.strip():
            self.system(line, instructions, "base_instructions")

    # response items ------------------------------------------------------------------------------
    def on_message(self, line: Line) -> None:
        payload, role = line.payload, line.payload.get("role")
        if role == "assistant":
            if self.plan.text(self.turn) == "response":
                self.add_text(line, message_text(payload))
        elif role == "user":
            kind = message_kind(payload)
            if kind == "turn_aborted":
                self.aborted(line, "message", message=content_of(payload.get("content")))
            elif kind is not None:
                self.system(line, content_of(payload.get("content")), kind)
            elif self.plan.prompts(self.turn) == "response":
                self.user(line, content_of(payload.get("content")))
        else:
            self.system(line, content_of(payload.get("content")), f"{role or 'unknown'}_message")

    def on_reasoning(self, line: Line) -> None:
        if self.plan.reasoning(self.turn) == "response":
            self.add_reasoning(line, reasoning_text(line.payload))
        else:
            self.agent_step(line)  # encrypted reasoning is still the model's output

    def on_call(self, line: Line) -> None:
        payload, kind = line.payload, line.payload.get("type")
        name, arguments, extra = as_str(payload.get("name")), None, {}
        if kind == "function_call":
            arguments = parse_arguments(payload.get("arguments"))
        elif kind == "custom_tool_call":
            arguments = {"input": payload.get("input")}
        elif kind == "local_shell_call":
            name, arguments = "local_shell", as_dict(payload.get("action"))
        elif kind == "tool_search_call":
            name, arguments = "tool_search", payload.get("arguments")
        if payload.get("namespace"):
            extra["namespace"] = payload["namespace"]
        if kind != "function_call":
            extra["item_type"] = kind
        step = self.agent_step(line, starts_response=False)
        self.b.tool_call(step, as_str(payload.get("call_id")) or as_str(payload.get("id")),
                         name or "unknown", arguments, extra=extra or None)

    def on_web_search(self, line: Line) -> None:
        action = {k: v for k, v in as_dict(line.payload.get("action")).items() if v is not None}
        step = self.agent_step(line, starts_response=False)
        call_id = self.b.tool_call(step, as_str(line.payload.get("call_id")) or as_str(line.payload.get("id")),
                                   "web_search", action, extra={"item_type": "web_search_call"})
        self.web_searches.append(call_id)

    def on_image_generation(self, line: Line) -> None:
        payload = line.payload
        step = self.agent_step(line, starts_response=False)
        arguments = {"revised_prompt": payload["revised_prompt"]} if payload.get("revised_prompt") else {}
        call_id = self.b.tool_call(step, as_str(payload.get("id")), "image_generation", arguments,
                                   extra={"item_type": "image_generation_call"})
        result = payload.get("result")
        content = [image_part("image/png", data=result)] if result else f"[{payload.get('status') or 'no image'}]"
        self.b.tool_result(call_id, content)

    def on_output(self, line: Line) -> None:
        payload = line.payload
        call_id = as_str(payload.get("call_id")) or ""
        if payload.get("type") == "tool_search_output":
            content, extra = orjson.dumps(payload.get("tools")).decode(), {}
        else:
            content, extra = tool_output(payload.get("output"))
        extra = {**extra, **self.plan.outcomes.get(call_id, {})}
        if not self.b.tool_result(call_id, content, extra=extra or None):
            self.orphan(line, content, {**extra, "call_id": call_id})
        self.after_output = self.open is not None

    def orphan(self, line: Line, content, extra: dict) -> None:
        """A result whose call was not recorded (or lies in a skipped copy of the parent): kept on
        the agent step before it, else on a step of its own."""
        step = self.b.last_step
        if step is None or not (step.source == "agent" or (step.extra or {}).get("kind") == "orphaned_tool_result"):
            step = self.system(line, "", "orphaned_tool_result")
        self.b.observe(step, content, extra={**extra, "orphan": True})

    def on_agent_message_item(self, line: Line) -> None:
        """A message between agents of one multi-agent run (author -> recipient)."""
        payload = line.payload
        details = {k: payload[k] for k in ("author", "recipient") if as_str(payload.get(k))}
        self.system(line, content_of(payload.get("content")), "inter_agent_message", **details)

    ITEM_HANDLERS = {"message": on_message, "reasoning": on_reasoning,
                     "function_call": on_call, "custom_tool_call": on_call, "local_shell_call": on_call,
                     "tool_search_call": on_call, "web_search_call": on_web_search,
                     "image_generation_call": on_image_generation, "compaction": compacted,
                     "agent_message": on_agent_message_item, "function_call_output": on_output,
                     "custom_tool_call_output": on_output, "tool_search_output": on_output}

    # events ------------------------------------------------------------------------------------
    def on_user_event(self, line: Line) -> None:
        source, prompt = prompt_of(line)
        if source is not None and source == self.plan.prompts(self.turn):
            self.user(line, prompt)

    def on_agent_message_event(self, line: Line) -> None:
        if self.plan.text(self.turn) == "event":
            self.add_text(line, as_str(line.payload.get("message")) or "")

    def on_reasoning_event(self, line: Line) -> None:
        if self.plan.reasoning(self.turn) == "event":
            self.add_reasoning(line, as_str(line.payload.get("text")) or "")

    def on_token_count(self, line: Line) -> None:
        usage = self.tokens.usage(line.payload)
        if usage is None:
            return
        model = as_str(as_dict(line.payload.get("info")).get("model"))
        if self.unmetered:
            step = self.unmetered[-1]
        else:  # a call that left no output in the rollout (a compaction, an aborted request)
            step = self.b.agent("", iso(line.timestamp), model_name=model or self.model, llm_call_count=1,
                                extra={"usage_without_output": True})
        step.metrics = metrics(usage["prompt"], usage["completion"], usage["cached"], extra=usage["extra"])
        self.unmetered = []
        self.close()

    def on_turn_usage(self, line: Line) -> None:
        """`turn.completed` (0.51-0.52 era): one turn's usage, over however many calls it made."""
        usage = usage_numbers(as_dict(line.payload.get("usage")))
        self.close()
        if usage is not None:
            self.b.agent("", iso(line.timestamp), model_name=self.model, extra={"usage_scope": "turn"},
                         metrics=metrics(usage["prompt"], usage["completion"], usage["cached"],
                                         extra=usage["extra"]))

    def on_web_search_end(self, line: Line) -> None:
        payload = line.payload
        lines = [f"query: {payload['query']}"] if as_str(payload.get("query")) else []
        for result in as_list(payload.get("results")):
            result = as_dict(result)
            lines.append(" — ".join(str(result[k]) for k in ("title", "url", "snippet") if result.get(k)))
        content = "\n".join(lines)
        if not (self.web_searches and self.b.tool_result(self.web_searches.pop(0), content)):
            self.orphan(line, content, {"event": "web_search_end"})

    def on_turn_aborted(self, line: Line) -> None:
        reason = as_str(line.payload.get("reason"))
        self.aborted(line, "event", message=f"Turn aborted ({reason or 'unknown reason'})", reason=reason)

    def aborted(self, line: Line, record: str, message, reason: str | None = None) -> None:
        """One system step per aborted turn. Codex records an abort twice, one after the other
        (either first): the `<turn_aborted>` message it gives the model, whose text the step
        keeps, and the `turn_aborted` event, which gives the reason."""
        step, seen = self.abort
        if step is None or step is not self.b.last_step or record in seen:
            step, seen = self.system(line, message, "turn_aborted"), set()
        elif record == "message":
            step.message = message
        if reason:
            step.extra["reason"] = reason
        self.abort = (step, seen | {record})

    def on_error(self, line: Line) -> None:
        payload = line.payload
        message = as_str(payload.get("message")) or as_str(as_dict(payload.get("error")).get("message"))
        self.system(line, message or "error", "error")

    def on_rollback(self, line: Line) -> None:
        turns = as_int(line.payload.get("num_turns"))
        self.system(line, f"The user rolled back the last {turns} turn(s)", "rollback", num_turns=turns)

    def on_review(self, line: Line) -> None:
        payload = line.payload
        if payload.get("type") == "entered_review_mode":
            hint = as_str(payload.get("user_facing_hint")) or as_str(payload.get("prompt")) or ""
            self.system(line, f"Entered review mode: {hint}".strip(), "review")
            return
        review = as_dict(payload.get("review_output"))
        findings = [f"- {as_dict(f).get('title')}: {as_dict(f).get('body')}" for f in as_list(review.get("findings"))]
        text = "\n".join([as_str(review.get("overall_explanation")) or "Exited review mode", *findings])
        self.system(line, text, "review")

    def on_undo(self, line: Line) -> None:
        success = line.payload.get("success")
        self.system(line, as_str(line.payload.get("message")) or "Undo", "undo",
                    **({"success": success} if isinstance(success, bool) else {}))

    def on_thread_name(self, line: Line) -> None:
        name = as_str(line.payload.get("thread_name"))
        if name:
            self.b.extra["thread_name"] = name

    EVENT_HANDLERS = {"user_message": on_user_event, "item_completed": on_user_event,
                      "agent_message": on_agent_message_event, "agent_reasoning": on_reasoning_event,
                      "agent_reasoning_raw_content": on_reasoning_event, "token_count": on_token_count,
                      "turn.completed": on_turn_usage, "web_search_end": on_web_search_end,
                      "turn_aborted": on_turn_aborted, "error": on_error, "thread_rolled_back": on_rollback,
                      "entered_review_mode": on_review, "exited_review_mode": on_review,
                      "undo_completed": on_undo, "thread_name_updated": on_thread_name,
                      "context_compacted": compacted}


# the archive's interface (discovery/archive.py) ---------------------------------------------------------------
def archive_dependencies(session: Session, env) -> list[str]:
    """The parent's rollout of a fork or a sub-agent: its turns tell the history the child
    copied from it from the child's own (`ForkGate`), so an archived child keeps it beside it."""
    parent = as_str(session.extra.get("parent_session_id"))
    found = find_rollout(env, parent) if parent else None
    return [found] if found else []
