"""Cursor CLI (cursor-agent): agent transcripts and chat stores under `~/.cursor/`.

- Transcripts: `projects/<slug>/agent-transcripts/<id>.jsonl`, `<id>/<id>.jsonl`, or the `.txt`
  variant; sub-agents in `<id>/subagents/`. JSONL lines are `{role, message: {content: [...]}}`
  with Anthropic-style blocks (`text`, `thinking`, `tool_use`, `tool_result`), plus roleless
  `{type: "turn_ended"}` lines. The `.txt` variant marks roles with `user:` / `assistant:` lines
  and blocks with `[Thinking]`, `[Tool call] <name>`, `[Tool result]` and an indented body.
  There are no timestamps, models or tokens, and `tool_use` blocks usually have no id: a call
  without one gets a synthetic id, and a result that names no known call answers the oldest
  call still waiting for one (`extra.joined_by: "order"`).
- Chat stores: `chats/<md5(cwd)>/<agentId>/store.db` (+ `meta.json`). SQLite `meta` (row '0':
  hex-encoded JSON with `agentId`, `name`, `createdAt`, `lastUsedModel`, `latestRootBlobId`)
  and content-addressed `blobs`. The root blob is protobuf: field 1 repeats the ids of the
  message blobs in order, field 9 names the workspace. Message blobs are JSON `{role, content}`
  (AI SDK parts: `text`, `reasoning`, `tool-call`, `tool-result`), or protobuf wrapping such
  JSON. Opened only through `agents.sqlite_ro`.

The cwd is never decoded from a folder name. A chat store's cwd is its `meta.json` `cwd`, or a
candidate (the root blob's workspace, a `Workspace Path:` in `<user_info>`, a sibling store's
`meta.json`) whose md5 is the folder name. A transcript's cwd is the `meta.json` of the chat
with the same id, or a workspace hint from the transcript verified by re-encoding it and
comparing it with the project folder's slug (or the chat folder's md5). Otherwise it is unknown
and the session belongs to no project (`extra.cwd_unknown` says why).
"""

from __future__ import annotations

import glob
import os
import re
from collections import namedtuple

from agents import sqlite_ro
from core import compiledre, storefs
from agents.base import (HEAD_BYTES, JsonlReader, Session, TooLarge, absolute_path, as_dict, as_list, as_str,
                         epoch, home, iso, listdir, loads_native, mtime, one_line, open_binary, read_whole)
from atif.build import image_part, text_part, TrajectoryBuilder
from atif.serialize import dumps_text, loads
from core.hashes import md5

NAME = "cursor"
PREFIX = "cu"
SESSIONS_PER_PROJECT = True  # one id in two project folders: two sessions (catalog.discover)
ATIF_NAME = "cursor-cli"
VERSION = 2

TRANSCRIPT_SUFFIXES = (".jsonl", ".txt")
SPAWNING_TOOLS = ("task", "agent", "subagent", "spawn_agent", "runsubagent")
_USER_QUERY = compiledre.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_WORKSPACE_PATH = compiledre.compile(r"Workspace Path:\s*(\S[^\n<]*)")
_CONTEXT_BLOCK = compiledre.compile(r"\s*<([a-z]+_[a-z_]+)>.*</\1>\s*$", re.S)
HEAD_LINES = 200


def cursor_dir(env) -> str:
    return os.path.join(home(env), ".cursor")


# discovery ---------------------------------------------------------------------------------------
def sources(env):
    """Transcripts first (they win over a chat store of the same id), then chat stores."""
    base = cursor_dir(env)
    found = []
    for project in listdir(os.path.join(base, "projects")):
        found.extend(_transcripts(os.path.join(base, "projects", project, "agent-transcripts")))
    found.extend(sorted(storefs.glob(os.path.join(glob.escape(base), "chats", "*", "*", "store.db"))))
    return found


def _transcripts(folder: str) -> list[str]:
    """`<id>.jsonl|txt` and `<id>/<id>.jsonl|txt`, a `.jsonl` hiding a `.txt` of the same id."""
    chosen: dict[str, str] = {}
    for name in listdir(folder):
        path = os.path.join(folder, name)
        candidates = [path] if storefs.isfile(path) else [os.path.join(path, name + s) for s in TRANSCRIPT_SUFFIXES]
        for candidate in candidates:
            stem, suffix = os.path.splitext(os.path.basename(candidate))
            if suffix in TRANSCRIPT_SUFFIXES and storefs.isfile(candidate):
                if stem not in chosen or suffix == ".jsonl":
                    chosen[stem] = candidate
    return [chosen[stem] for stem in sorted(chosen)]


def dependencies(source: str, env) -> list[str]:
    if _is_store(source):
        folder = os.path.dirname(source)
        return [*sqlite_ro.fingerprint_paths(source), os.path.join(folder, "meta.json")]
    return [source, *_subagent_files(source), *_chat_meta_paths(source)]


def _is_store(path: str) -> bool:
    return os.path.basename(path) == "store.db"


def _subagent_files(transcript: str) -> list[str]:
    stem = os.path.splitext(os.path.basename(transcript))[0]
    parent = os.path.dirname(transcript)
    folder = os.path.join(parent if os.path.basename(parent) == stem else os.path.join(parent, stem), "subagents")
    return [os.path.join(folder, n) for n in listdir(folder) if n.endswith(TRANSCRIPT_SUFFIXES)]


def _chat_meta_paths(transcript: str) -> list[str]:
    """The `meta.json` of a chat store with the transcript's id, if Cursor kept one."""
    projects = os.path.dirname(_transcript_project(transcript))
    stem = os.path.splitext(os.path.basename(transcript))[0]
    chats = os.path.join(os.path.dirname(projects), "chats")
    return sorted(storefs.glob(os.path.join(glob.escape(chats), "*", glob.escape(stem), "meta.json")))


def _transcript_project(transcript: str) -> str:
    """`projects/<slug>` of a transcript."""
    path = os.path.dirname(transcript)
    while os.path.basename(path) != "agent-transcripts" and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return os.path.dirname(path)


def scan(source: str, env) -> list[Session]:
    return [_scan_store(source, env) if _is_store(source) else _scan_transcript(source)]


# the cwd -----------------------------------------------------------------------------------------
def _md5(path: str) -> str:
    return md5(path.encode()).hexdigest()


def _slug_tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[\W_]+", text) if t]


def _as_path(hint: str) -> str | None:
    """A workspace hint as an absolute path (`file://` URIs decoded)."""
    hint = hint.strip()
    if hint.startswith("file://"):
        from urllib.parse import unquote, urlparse  # here: only a workspace hint needs it

        hint = unquote(urlparse(hint).path)
    if not os.path.isabs(hint):
        return None
    return hint.rstrip("/") or "/"


def _workspace_hints(texts) -> list[str]:
    hints = []
    for text in texts:
        for match in _WORKSPACE_PATH.findall(text or ""):
            path = _as_path(match)
            if path and path not in hints:
                hints.append(path)
    return hints


def _read_json(path: str) -> dict:
    try:
        return as_dict(loads_native(read_whole(path)))
    except (OSError, ValueError):
        return {}


class _Cwd(namedtuple("_Cwd", "path source unverified", defaults=(None, None, ()))):
    """The folder a chat ran in, what says so, and the candidates nothing confirmed."""
    __slots__ = ()

    def extra(self) -> dict:
        if self.path:
            return {"cwd_source": self.source}
        found = {"cwd_unknown": "no meta.json cwd, and no workspace hint that matches the folder"}
        if self.unverified:
            found["cwd_candidates_unverified"] = self.unverified
        return found


def _resolve_cwd(meta_cwd, candidates, md5_folder: str | None = None, slug: str | None = None) -> _Cwd:
    if absolute_path(meta_cwd):
        return _Cwd(meta_cwd, "meta.json")
    for candidate in candidates:
        if md5_folder and _md5(candidate) == md5_folder:
            return _Cwd(candidate, "md5 of the chat folder")
        if slug and _slug_tokens(candidate) == _slug_tokens(slug):
            return _Cwd(candidate, "workspace hint matching the project folder")
    return _Cwd(unverified=list(candidates))


# transcripts -------------------------------------------------------------------------------------
class _Message:
    """One message: its `blocks` are dicts with "type" normalised (text, thinking, tool_use,
    tool_result)."""

    def __init__(self, role: str, blocks: list, model: str | None = None):
        self.role, self.blocks, self.model = role, blocks, model


def read_transcript(path: str, builder: TrajectoryBuilder | None = None, limit: int | None = None) -> list[_Message]:
    if path.endswith(".txt"):
        return _read_txt(path, builder, limit)
    reader = JsonlReader(path)
    messages, turns, unknown = [], 0, 0
    for record in reader:
        if "role" not in record:   # `turn_ended` markers, and lines of kinds not known yet
            turns += record.get("type") == "turn_ended"
            unknown += record.get("type") != "turn_ended"
            continue
        message = as_dict(record.get("message"))
        content = message.get("content", record.get("content"))
        blocks = [_block(b) for b in ([{"type": "text", "text": content}] if isinstance(content, str) else as_list(content))]
        messages.append(_Message(as_str(record.get("role")) or "assistant", [b for b in blocks if b],
                                 as_str(record.get("model"))))
        if limit and len(messages) >= limit:
            break
    if builder is not None:
        for problem in reader.problems():
            builder.warn(problem)
        builder.extra.update({k: v for k, v in (("turns_ended", turns), ("unknown_lines", unknown)) if v})
    return messages


def _block(block) -> dict | None:
    """A content block with its type normalised (Cursor wrote several spellings)."""
    if not isinstance(block, dict):
        return None
    kind = (as_str(block.get("type")) or "").lower().replace("-", "_")
    if kind in ("tool_use", "tool_call"):
        return {**block, "type": "tool_use"}
    if kind == "tool_result":
        return {**block, "type": "tool_result"}
    if kind in ("thinking", "reasoning", "redacted_thinking"):
        return {"type": "thinking", "thinking": as_str(block.get("thinking")) or as_str(block.get("text")) or ""}
    if kind == "image":
        return block
    if isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    return None


def _read_txt(path: str, builder, limit) -> list[_Message]:
    try:
        lines = _txt_bytes(path, limit).decode("utf-8", "replace").split("\n")
    except (OSError, TooLarge) as exc:
        if builder is not None:
            builder.warn(f"cannot read {path}: {exc}")
        return []
    messages: list[_Message] = []
    current = None
    for line in lines:
        marker = line.strip()
        if marker in ("user:", "assistant:"):
            current = _Message(marker[:-1], [])
            messages.append(current)
            if limit and len(messages) > limit:
                break
        elif current is not None:
            current.blocks.append(line)
    for message in messages:
        message.blocks = _txt_blocks(message.role, message.blocks)
    return messages


def _txt_bytes(path: str, limit) -> bytes:
    """The head of a text transcript when only its first messages are wanted, else all of it
    (within FILE_LIMIT)."""
    if not limit:
        return read_whole(path)
    with open_binary(path) as handle:
        return handle.read(HEAD_BYTES)


def _txt_blocks(role: str, lines: list[str]) -> list[dict]:
    if role == "user":
        return [{"type": "text", "text": "\n".join(lines).strip()}]
    blocks, text, index = [], [], 0
    while index < len(lines):
        marker = lines[index].strip()
        header = next((h for h in ("[Thinking]", "[Tool call]", "[Tool result]") if marker.startswith(h)), None)
        if header is None:
            text.append(lines[index])
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not _ends_body(lines[end]):
            end += 1
        body = _dedent(lines[index + 1:end])
        name = marker[len(header):].strip()
        if header == "[Thinking]":
            blocks.append({"type": "thinking", "thinking": "\n".join([name, body]).strip()})
        elif header == "[Tool call]":
            blocks.append({"type": "tool_use", "name": name, "input": _txt_arguments(body)})
        else:
            blocks.append({"type": "tool_result", "name": name, "content": body})
        index = end
    if "\n".join(text).strip():
        blocks.insert(0, {"type": "text", "text": "\n".join(text).strip()})
    return blocks


def _ends_body(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and (stripped.startswith(("[Thinking]", "[Tool call]", "[Tool result]"))
                               or line[0] not in " \t")


def _dedent(lines: list[str]) -> str:
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join(line[cut:] for line in lines).strip()


def _txt_arguments(body: str) -> dict:
    """A `[Tool call]` body: JSON, or `key=value` lines, else the raw text."""
    try:
        value = loads(body)
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    pairs = [line.split("=", 1) for line in body.splitlines() if line.strip()]
    if pairs and all(len(p) == 2 and p[0].strip() for p in pairs):
        return {key.strip(): value.strip() for key, value in pairs}
    return {"input": body} if body else {}


def _user_text(text: str) -> tuple[str, str]:
    """(what the user typed, the context Cursor wrapped around it). Without a `<user_query>`,
    a text that is one `<snake_case>` block (`<user_info>`, `<attached_files>`, ...) is context."""
    queries = _USER_QUERY.findall(text)
    if queries:
        return "\n\n".join(q for q in queries if q), _USER_QUERY.sub("", text).strip()
    if _CONTEXT_BLOCK.match(text):
        return "", text.strip()
    return text.strip(), ""


def _first_prompt(messages: list[_Message]) -> str:
    for message in messages:
        if message.role == "user":
            typed = _user_text("\n".join(b["text"] for b in message.blocks if b["type"] == "text"))[0]
            if typed:
                return typed
    return ""


def _texts(messages: list[_Message]) -> list[str]:
    return [b["text"] for m in messages if m.role in ("user", "system") for b in m.blocks if b["type"] == "text"]


def _transcript_cwd(path: str, messages: list[_Message]) -> tuple[_Cwd, dict]:
    metas = [(p, _read_json(p)) for p in _chat_meta_paths(path)]
    meta_path, meta = metas[0] if metas else (None, {})
    md5_folder = os.path.basename(os.path.dirname(os.path.dirname(meta_path))) if meta_path else None
    slug = os.path.basename(_transcript_project(path))
    return _resolve_cwd(meta.get("cwd"), _workspace_hints(_texts(messages)), md5_folder, slug), meta


def _scan_transcript(path: str) -> Session:
    messages = read_transcript(path, limit=HEAD_LINES)
    cwd, meta = _transcript_cwd(path, messages)
    stem = os.path.splitext(os.path.basename(path))[0]
    return Session(agent=NAME, native_id=stem, source=path,
                   started=epoch(meta.get("createdAt")) or mtime(path), cwd=cwd.path,
                   title=one_line(_first_prompt(messages)), model=as_str(meta.get("lastUsedModel")),
                   extra={"format": "transcript-" + os.path.splitext(path)[1][1:], **cwd.extra()})


# chat stores -------------------------------------------------------------------------------------
def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def proto_fields(data: bytes, limit: int) -> list[tuple[int, object]]:
    """(field number, value) of a protobuf message, the first `limit` of them: ints for
    varints, bytes otherwise. Raises ValueError for bytes that are not protobuf."""
    found, position = [], 0
    while position < len(data) and len(found) < limit:
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 2:
            length, position = _varint(data, position)
            if position + length > len(data):
                raise ValueError("field runs past the end")
            value, position = data[position:position + length], position + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, position = data[position:position + size], position + size
        else:
            raise ValueError(f"wire type {wire}")
        found.append((number, value))
    return found


def _as_bytes(value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value or b"")


def decode_message(data) -> dict | None:
    """A message blob: JSON `{role, content}`, or protobuf with that JSON in a field."""
    raw = _as_bytes(data)
    for candidate in [raw, *_wrapped(raw)]:
        if candidate.lstrip()[:1] == b"{":
            try:
                value = loads(candidate)
            except ValueError:
                continue
            if isinstance(value, dict) and "role" in value:
                return value
    return None


WRAPPER_FIELDS = 1024  # fields looked into for the JSON of a wrapped message blob (it has a handful)


def _wrapped(raw: bytes) -> list[bytes]:
    try:
        return [v for _, v in proto_fields(raw, WRAPPER_FIELDS) if isinstance(v, bytes)]
    except ValueError:
        return []


class _Store(namedtuple("_Store", "meta ids workspace blobs")):
    """A chat store read: its meta row, message ids, workspace hint and message blobs."""
    __slots__ = ()


def read_store(path: str, env, builder: TrajectoryBuilder | None = None, first_user_only: bool = False) -> _Store:
    """The meta row and the message blobs of a chat store (all of them, or up to the first
    user message when only the title is wanted), read within one `sqlite_ro.RowBudget`: the
    blobs after it is spent are not read, nor named."""
    connection = sqlite_ro.connect(path, env)
    budget = sqlite_ro.RowBudget()
    try:
        meta = _store_meta(connection, budget)
        root = _blob(connection, budget, as_str(meta.get("latestRootBlobId")))
        ids, workspace = _root_entries(root, builder)
        blobs = {}
        for blob_id in ids:
            blobs[blob_id] = _blob(connection, budget, blob_id)
            if budget.exhausted:
                ids = ids[:len(blobs) - 1]
                break
            if first_user_only and _first_prompt([_store_message(decode_message(blobs[blob_id]))]):
                break
    finally:
        connection.close()
    for problem in budget.take_warnings() if builder is not None else ():
        builder.warn(problem)
    return _Store(meta, ids, workspace, blobs)


def _store_meta(connection, budget) -> dict:
    rows = (budget.select(connection, ["key", "value"], "FROM meta", (), "meta rows")
            if "key" in sqlite_ro.columns(connection, "meta") else [])
    meta = {}
    for key, value in rows:
        if key == "0" and isinstance(value, (str, bytes)):
            try:
                meta.update(as_dict(loads(bytes.fromhex(value.decode() if isinstance(value, bytes) else value))))
                continue
            except ValueError:
                pass
        meta[str(key)] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return meta


def _blob(connection, budget, blob_id: str | None):
    if not blob_id or "id" not in sqlite_ro.columns(connection, "blobs"):
        return None
    found = budget.select(connection, ["data"], "FROM blobs WHERE id = ?", (blob_id,), "message blobs")
    return found[0][0] if found else None


def _root_entries(root, builder) -> tuple[list[str], str | None]:
    """The message ids (field 1) and the workspace URI (field 9) of the root blob."""
    if root is None:
        if builder is not None:
            builder.warn("the chat store's root blob (latestRootBlobId) is missing: no messages could be read")
        return [], None
    try:
        fields = proto_fields(_as_bytes(root), sqlite_ro.MAX_SESSION_ROWS)
    except ValueError as exc:
        if builder is not None:
            builder.warn(f"the chat store's root blob is not protobuf ({exc}): no messages could be read")
        return [], None
    if len(fields) == sqlite_ro.MAX_SESSION_ROWS and builder is not None:
        builder.warn(f"the chat store's root blob names more than {sqlite_ro.MAX_SESSION_ROWS} "
                     "entries: the rest were not read")
    ids = [v.hex() if len(v) == 32 else v.decode("ascii", "replace") for n, v in fields if n == 1 and isinstance(v, bytes)]
    workspace = next((v.decode("utf-8", "replace") for n, v in fields if n == 9 and isinstance(v, bytes)), None)
    return ids, workspace


def _store_message(value: dict | None) -> _Message:
    """A chat-store message as a transcript message: AI SDK parts mapped to the same blocks."""
    value = as_dict(value)
    content = value.get("content")
    blocks = []
    for part in ([{"type": "text", "text": content}] if isinstance(content, str) else as_list(content)):
        block = _block(part)
        if block is None:
            continue
        if block["type"] == "tool_use":
            block = {"type": "tool_use", "id": as_str(part.get("toolCallId")) or as_str(part.get("id")),
                     "name": as_str(part.get("toolName")) or as_str(part.get("name")),
                     "input": part.get("args", part.get("input"))}
        elif block["type"] == "tool_result":
            block = {"type": "tool_result", "tool_use_id": as_str(part.get("toolCallId")) or as_str(part.get("tool_use_id")),
                     "content": part.get("result", part.get("output", part.get("content"))),
                     "is_error": bool(part.get("isError") or part.get("is_error"))}
        blocks.append(block)
    return _Message(as_str(value.get("role")) or "assistant", blocks)


def _store_cwd(path: str, store: _Store, messages: list[_Message]) -> _Cwd:
    folder = os.path.dirname(path)
    md5_folder = os.path.basename(os.path.dirname(folder))
    meta_json = _read_json(os.path.join(folder, "meta.json"))
    candidates = [c for c in [_as_path(store.workspace or ""), *_workspace_hints(_texts(messages))] if c]
    for sibling in listdir(os.path.dirname(folder)):
        sibling_cwd = as_str(_read_json(os.path.join(os.path.dirname(folder), sibling, "meta.json")).get("cwd"))
        if sibling_cwd and sibling_cwd not in candidates:
            candidates.append(sibling_cwd)
    return _resolve_cwd(meta_json.get("cwd") or store.meta.get("cwd"), candidates, md5_folder)


def _scan_store(path: str, env) -> Session:
    store = read_store(path, env, first_user_only=True)
    messages = [_store_message(decode_message(store.blobs[i])) for i in store.ids if store.blobs.get(i) is not None]
    cwd = _store_cwd(path, store, messages)
    meta = store.meta
    native_id = as_str(meta.get("agentId")) or os.path.basename(os.path.dirname(path))
    return Session(agent=NAME, native_id=native_id, source=path,
                   started=epoch(meta.get("createdAt")) or mtime(path), cwd=cwd.path,
                   title=one_line(_first_prompt(messages) or as_str(meta.get("name")) or ""),
                   model=as_str(meta.get("lastUsedModel")), extra={"format": "chat-store", **cwd.extra()})


# steps -------------------------------------------------------------------------------------------
class _Translation:
    def __init__(self, builder: TrajectoryBuilder, spawned: dict | None = None):
        self.builder = builder
        self.spawned = spawned or {}   # call ordinal -> subagent refs
        self.waiting: list[str] = []    # call ids without a result, oldest first
        self.refs: dict[str, list] = {}
        self.calls = 0

    def messages(self, messages: list[_Message]) -> None:
        for message in messages:
            if message.role == "user":
                self.user(message)
            elif message.role in ("system", "developer"):
                self.builder.system(self.content(message.blocks), extra={"kind": "system_prompt"})
            elif message.role == "tool":
                self.results(message.blocks)
            else:
                self.agent(message)
        for cid in list(self.waiting):
            if cid in self.refs:
                self.builder.tool_result(cid, None, subagents=self.refs.pop(cid))

    def content(self, blocks: list[dict]):
        pieces = []
        for block in blocks:
            if block["type"] == "text" and block["text"]:
                pieces.append(text_part(block["text"]))
            elif block["type"] == "image":
                pieces.append(_image(block))
        if all(p["type"] == "text" for p in pieces):
            return "\n".join(p["text"] for p in pieces)
        return pieces

    def user(self, message: _Message) -> None:
        texts = [b for b in message.blocks if b["type"] != "tool_result"]
        combined = self.content(texts)
        if isinstance(combined, str):
            typed, context = _user_text(combined)
            if context:
                self.builder.system(context, extra={"kind": "context"})
            if typed:
                self.builder.user(typed)
        elif combined:
            self.builder.user(combined)
        self.results([b for b in message.blocks if b["type"] == "tool_result"])

    def agent(self, message: _Message) -> None:
        reasoning = "\n\n".join(b["thinking"] for b in message.blocks if b["type"] == "thinking" and b["thinking"])
        step = self.builder.agent(self.content([b for b in message.blocks if b["type"] == "text"]),
                                  model_name=message.model, reasoning=reasoning or None)
        for block in message.blocks:
            if block["type"] == "tool_use":
                cid = self.builder.tool_call(step, as_str(block.get("id")),
                                             as_str(block.get("name")) or as_str(block.get("tool")), block.get("input"))
                self.waiting.append(cid)
                if self.calls in self.spawned:
                    self.refs[cid] = self.spawned[self.calls]
                self.calls += 1
        self.results([b for b in message.blocks if b["type"] == "tool_result"])

    def results(self, blocks: list[dict]) -> None:
        for block in blocks:
            content = _result_content(block.get("content"))
            extra = {"is_error": True} if block.get("is_error") else {}
            cid = as_str(block.get("tool_use_id"))
            if not (cid and cid in self.waiting) and self.waiting:
                extra.update({"joined_by": "order", "tool_use_id": cid} if cid else {"joined_by": "order"})
                cid = self.waiting[0]
            if cid in self.waiting:
                self.waiting.remove(cid)
                self.builder.tool_result(cid, content, extra=extra, subagents=self.refs.pop(cid, None))
            else:
                step = self.builder.system(f"result of {as_str(block.get('name')) or 'a tool'} with no "
                                           "matching call", extra={"kind": "orphan_tool_result"})
                self.builder.observe(step, content, extra=extra)


def _image(block: dict) -> dict:
    source = as_dict(block.get("source"))
    media = as_str(source.get("media_type")) or as_str(block.get("mimeType")) or as_str(block.get("mediaType"))
    data = source.get("data", block.get("image"))
    return image_part(media, data=data if isinstance(data, str) else "")


def _result_content(value):
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):
        blocks = [_block(v) for v in value]
        texts = [b["text"] for b in blocks if b and b["type"] == "text"]
        if len(texts) == len(value):
            return "\n".join(texts)
    return dumps_text(value)


# sub-agents --------------------------------------------------------------------------------------
def _spawn_links(messages: list[_Message], children: list[tuple[str, str]]) -> dict[int, str]:
    """Which call (by ordinal) spawned which child (by trajectory id): the call whose prompt is
    the child's first prompt, then, when the rest pair up one to one, spawning calls in order."""
    calls = [b for m in messages if m.role not in ("user", "system", "tool") for b in m.blocks if b["type"] == "tool_use"]
    links: dict[int, str] = {}
    remaining = list(children)
    for ordinal, call in enumerate(calls):
        arguments = as_dict(call.get("input"))
        prompts = {as_str(arguments.get(k)).strip() for k in ("prompt", "task", "description", "query")
                   if as_str(arguments.get(k))}
        match = next((c for c in remaining if c[1] and c[1] in prompts), None)
        if match:
            links[ordinal] = match[0]
            remaining.remove(match)
    spawners = [i for i, c in enumerate(calls) if i not in links
                and (as_str(c.get("name")) or "").lower() in SPAWNING_TOOLS]
    if remaining and len(spawners) == len(remaining):
        links.update(zip(spawners, (c[0] for c in remaining)))
    return links


def _embed_subagents(builder: TrajectoryBuilder, transcript: str, messages: list[_Message]) -> dict:
    children = []
    for path in sorted(_subagent_files(transcript), key=lambda p: (mtime(p) or 0, p)):
        sub = TrajectoryBuilder(ATIF_NAME, session_id=os.path.splitext(os.path.basename(path))[0])
        sub_messages = read_transcript(path, sub)
        _Translation(sub).messages(sub_messages)
        sub.extra["format"] = "transcript-" + os.path.splitext(path)[1][1:]
        children.append((sub.session_id, _first_prompt(sub_messages), sub.build()))
    links = _spawn_links(messages, [(tid, prompt) for tid, prompt, _ in children])
    refs = {tid: builder.embed(doc, tid) for tid, _, doc in children}
    unlinked = sorted(set(refs) - set(links.values()))
    if unlinked:
        builder.extra["subagents_without_spawning_call"] = unlinked
    return {ordinal: refs[tid] for ordinal, tid in links.items()}


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    builder = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id)
    if _is_store(session.source):
        _translate_store(builder, session, env)
    else:
        _translate_transcript(builder, session)
    builder.extra.update({k: v for k, v in session.extra.items() if k.startswith("cwd_")})
    return builder.build()


def _translate_transcript(builder: TrajectoryBuilder, session: Session) -> None:
    messages = read_transcript(session.source, builder)
    spawned = _embed_subagents(builder, session.source, messages)
    _Translation(builder, spawned).messages(messages)
    builder.model_name = session.model
    builder.extra["format"] = session.extra.get("format")
    builder.extra["timestamps"] = "none recorded; the session time is the file's modification time"


def _translate_store(builder: TrajectoryBuilder, session: Session, env) -> None:
    store = read_store(session.source, env, builder)
    messages = []
    missing = undecodable = 0
    for blob_id in store.ids:
        data = store.blobs.get(blob_id)
        value = decode_message(data) if data is not None else None
        missing += data is None
        undecodable += data is not None and value is None
        if value is not None:
            messages.append(_store_message(value))
    if missing:
        builder.warn(f"{missing} message blob(s) named by the root blob are missing from the store "
                     "or were left out for their size")
    if undecodable:
        builder.warn(f"{undecodable} message blob(s) could not be decoded (neither JSON nor protobuf with JSON)")
    _Translation(builder).messages(messages)
    meta = store.meta
    builder.model_name = as_str(meta.get("lastUsedModel"))
    builder.extra.update({k: v for k, v in (("format", "chat-store"), ("name", as_str(meta.get("name"))),
                                            ("mode", as_str(meta.get("mode"))),
                                            ("created_at", iso(meta.get("createdAt")))) if v})
