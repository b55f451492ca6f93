"""Gemini CLI: `${GEMINI_CLI_HOME:-$HOME}/.gemini/tmp/<project>/chats/`.

Formats (stores.md §5):
- JSONL (v0.39+): a metadata line, then message records appended again whenever a message
  gains tool calls or tokens (the last copy of an id wins, at the place of its first copy),
  `{"$set": {...}}` metadata updates and `{"$rewindTo": id}`, which deletes that message and
  every later one. A resumed session appends a new metadata line.
- `$set.messages` is a snapshot of the model's history (written at start, on resume, after
  compression or output masking). Its copies of known messages are often poorer (no tokens,
  tool calls flattened into parts), so a known message keeps its own record; messages only
  snapshots have (the `<session_context>` preamble, a compression summary, the function
  responses of a rebuilt history) are inserted where the snapshot places them, as their first
  copy. A snapshot never deletes: what was compressed away still happened, and stays in the
  trajectory.
- Legacy `.json` (before v0.39): one `ConversationRecord`, rewritten on every update. A resumed
  legacy session is migrated to a new `.jsonl` next to it, which therefore wins (sources list
  `.jsonl` files first and the catalog keeps the first source of an id).
- Sub-agents (v0.37+): `chats/<parentSessionId>/<sessionId>.jsonl` with `kind: "subagent"`,
  embedded into the parent. A folder of them named after no chat (`skill-extraction-<hex>/`,
  whose parent is not recorded) is listed: each transcript a session, with a warning.

Two chat files of a folder with the same `sessionId` and different start times (Cloud Shell's
`a2a-server` records every conversation of its process so) are two sessions: the later one's
id adds its start time (`_conversation_id`).

`logs.json` (one per project) holds only the user's prompts. It is a source, listed after every
chat file: a session that has a chat file is served from it (the catalog keeps the first source
of an id), and only sessions whose chat was never recorded (chat recording off, versions before
chat recording, deleted chats) come from the prompt log, so no prompt is lost and none appears
twice.

The project root (the session's cwd) is never in the messages: it comes from the folder's
`.project_root`, from `projects.json`, or from matching the session's `projectHash`
(sha256 of the root) against the roots those files know; never from the folder name.
"""

from __future__ import annotations

import os
import re

from core import compiledre, storefs
from agents.base import (JsonlReader, Session, TooLarge, absolute_path, as_dict, as_list, as_str,
                         complete_items, epoch, head_records, home, iso, listdir, listdir_cached, loads_native,
                         one_line, open_binary, read_whole)
from agents.genai import (function_calls, function_responses, message_content, parts_of,
                          response_content, thought_text, usage_metrics, visible_text)
from atif.build import TrajectoryBuilder
from core.hashes import sha256

NAME = "gemini"
PREFIX = "gm"
SESSIONS_PER_PROJECT = True  # one id in two project folders: two sessions (catalog.discover)
ATIF_NAME = "gemini-cli"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("gemini", "--resume", "{id}"), "resume_prompt": ("gemini", "--resume", "{id}", "-p", "{prompt}"),
       "start": ("gemini", "-i", "{prompt}"), "start_prompt": ("gemini", "-p", "{prompt}"), "checked": "0.61.0"}
VERSION = 4   # 4: chat names whose sessionId start holds a hyphen (a2a-server) are told apart

PROMPT_LOG = "logs.json"
SESSION_CONTEXT = "<session_context>"
STATE_SNAPSHOT = "<state_snapshot>"
AGENT_TYPES = ("gemini", "model", "assistant")
# `session-<yyyy-mm-ddThh-mm>-<the first 8 characters of the sessionId>`: any characters, a
# hyphen too (`a2a-server` gives `…-a2a-serv`); other names end in 8 letters or digits.
_CHAT_NAME = compiledre.compile(r"^session-\d{4}-\d\d-\d\dT\d\d-\d\d-(.{1,8})$", re.S)
_SHORT_ID = compiledre.compile(r"-([0-9A-Za-z]{8})$")
SHELL_TOOL = "run_shell_command"
_EXIT_CODE = compiledre.compile(r"^Exit Code: (-?\d+)\s*$", re.M)


def gemini_dir(env) -> str:
    return os.path.join(env.get("GEMINI_CLI_HOME") or home(env), ".gemini")


# discovery ---------------------------------------------------------------------------------------
def sources(env):
    """Chat files (`.jsonl` before `.json`), then the transcripts of sub-agent folders named
    after no chat (`_unclaimed_folders`), then the prompt logs."""
    tmp = os.path.join(gemini_dir(env), "tmp")
    jsonl, legacy, unclaimed, logs = [], [], [], []
    for project in listdir(tmp):
        chats = os.path.join(tmp, project, "chats")
        names, folders = listdir(chats), []
        for name in names:
            path = os.path.join(chats, name)
            if name.endswith(".jsonl") and storefs.isfile(path):
                jsonl.append(path)
            elif name.endswith(".json") and storefs.isfile(path):
                legacy.append(path)
            elif storefs.isdir(path):
                folders.append(name)
        for folder in _unclaimed_folders(names, folders):
            unclaimed.extend(_subagent_files(os.path.join(chats, folder)))
        log = os.path.join(tmp, project, PROMPT_LOG)
        if storefs.isfile(log):
            logs.append(log)
    return jsonl + legacy + unclaimed + logs


def _unclaimed_folders(names: list[str], folders: list[str]) -> list[str]:
    """The folders of a `chats/` holding `names` that no chat file's sub-agent lookup reaches
    (`_subagent_dirs`: a folder starting with the 8 characters a chat file's name ends with),
    such as `skill-extraction-<hex>/`: their transcripts are listed as sessions of their own
    rather than lost."""
    stems = (os.path.splitext(name)[0] for name in names if name.endswith((".json", ".jsonl")))
    shorts = {short for short in map(_short_id, stems) if short}
    return [folder for folder in folders if not any(folder.startswith(short) for short in shorts)]


def _unclaimed(source: str) -> bool:
    """Whether a chat file lies in a sub-agent folder that no chat claims (see `sources`)."""
    return os.path.basename(os.path.dirname(source)) != "chats"


def dependencies(source: str, env) -> list[str]:
    project = os.path.dirname(source) if _is_prompt_log(source) else _project_dir(source)
    deps = [source, os.path.join(project, ".project_root"),
            os.path.join(os.path.dirname(os.path.dirname(project)), "projects.json")]
    if not _is_prompt_log(source) and not _unclaimed(source):
        deps.extend(path for directory in _subagent_dirs(source) for path in _subagent_files(directory))
    return deps


def _project_dir(chat: str) -> str:
    """`tmp/<project>` of a chat file (`chats/<file>`, or `chats/<folder>/<file>` unclaimed)."""
    chats = os.path.dirname(chat)
    return os.path.dirname(os.path.dirname(chats) if _unclaimed(chat) else chats)


def _is_prompt_log(path: str) -> bool:
    return os.path.basename(path) == PROMPT_LOG


def _subagent_dirs(source: str, session_id: str | None = None) -> list[str]:
    """Sub-agent folders of a chat file: `chats/<sessionId>/`. Without the session id (discovery
    reads no file), every folder starting with the 8 characters the file name ends with."""
    chats = os.path.dirname(source)
    if session_id:
        path = os.path.join(chats, session_id)
        return [path] if storefs.isdir(path) else []
    short = _short_id(os.path.splitext(os.path.basename(source))[0])
    if not short:
        return []
    return [os.path.join(chats, name) for name in listdir_cached(chats)
            if name.startswith(short) and storefs.isdir(os.path.join(chats, name))]


def _short_id(stem: str) -> str | None:
    """The start of the `sessionId` a chat file's name ends with (`_CHAT_NAME`), or None."""
    match = _CHAT_NAME.match(stem) or _SHORT_ID.search(stem)
    return match.group(1) if match else None


def _subagent_files(directory: str) -> list[str]:
    return [os.path.join(directory, name) for name in listdir(directory) if name.endswith((".jsonl", ".json"))]


def scan(source: str, env) -> list[Session]:
    if _is_prompt_log(source):
        return _scan_prompt_log(source)
    if source.endswith(".json"):   # rewritten whole on every update: no head to read
        conversation = load_conversation(source, TrajectoryBuilder(ATIF_NAME))
        meta, messages, fmt = conversation.meta, conversation.messages, conversation.fmt
    else:
        meta, messages, fmt = _head(source)
    project = _project_dir(source)
    started = epoch(meta.get("startTime")) or next(
        (epoch(_raw_time(m)) for m in messages if epoch(_raw_time(m))), None)
    session_id = as_str(meta.get("sessionId"))
    native_id = (_conversation_id(source, session_id, epoch(meta.get("startTime"))) if session_id
                 else os.path.splitext(os.path.basename(source))[0])
    model = next((as_str(m.get("model")) for m in messages
                  if _kind(m) in AGENT_TYPES and as_str(m.get("model"))), None)
    title = next((t for t in map(_prompt_text, messages) if t), "")
    return [Session(agent=NAME, native_id=native_id, source=source, started=started,
                    cwd=project_root(project, as_str(meta.get("projectHash"))), title=one_line(title),
                    model=model, extra={"format": fmt})]


def _conversation_id(source: str, session_id: str, started: float | None) -> str:
    """The id of the conversation a chat file holds: its `sessionId`, unless another chat file
    of the folder (its name ending in the same start of a sessionId, `_short_id`) records the same `sessionId` with
    an earlier start: one server process (Cloud Shell's `a2a-server`) records each of its
    conversations under its own id. The later conversation's id then adds its start time
    (`<sessionId>-<yyyymmddThhmmss>`), which no later file changes. A legacy `.json` migrated
    to a `.jsonl` of the same name is the same conversation."""
    stem = os.path.splitext(os.path.basename(source))[0]
    short = _short_id(stem)
    if started is None or short is None:
        return session_id
    chats = os.path.dirname(source)
    for name in listdir_cached(chats):
        other, suffix = os.path.splitext(name)
        if other != stem and suffix in (".json", ".jsonl") and _short_id(other) == short:
            other_id, other_start = _identity(os.path.join(chats, name))
            if other_id == session_id and other_start is not None and other_start < started:
                return session_id + "-" + iso(started)[:19].replace("-", "").replace(":", "")
    return session_id


def _identity(path: str) -> tuple:
    """(sessionId, start) a chat file's metadata records."""
    if path.endswith(".json"):
        meta = as_dict(_read_document(path))
    else:
        meta = next((r for r in head_records(path, 64 * 1024) if isinstance(r.get("sessionId"), str)), {})
    return as_str(meta.get("sessionId")), epoch(meta.get("startTime"))


def _head(source: str) -> tuple[dict, list[dict], str]:
    """Metadata and the first messages of a JSONL chat, from the head of the file."""
    meta: dict = {}
    messages: list[dict] = []
    wanted = _Wanted()
    for record in head_records(source):
        if isinstance(record.get("id"), str):
            messages.append(record)
        elif isinstance(record.get("$set"), dict):
            messages.extend(m for m in as_list(record["$set"].get("messages")) if isinstance(m, dict))
        elif isinstance(record.get("sessionId"), str) and not meta:
            meta = record
        if wanted.found(meta, messages):
            break  # the rest of the head cannot change what scan takes of it
    return meta, messages, "jsonl"


class _Wanted:
    """Whether the messages so far hold all that `scan` takes of them: a time (or the metadata's),
    a model and a prompt, the metadata being known (each message looked at once)."""

    def __init__(self):
        self.seen = 0
        self.time = self.model = self.prompt = False

    def found(self, meta: dict, messages: list) -> bool:
        for message in messages[self.seen:]:
            self.time = self.time or bool(epoch(_raw_time(message)))
            self.model = self.model or (_kind(message) in AGENT_TYPES and bool(as_str(message.get("model"))))
            self.prompt = self.prompt or bool(_prompt_text(message))
        self.seen = len(messages)
        return bool(meta) and self.model and self.prompt and (self.time or bool(epoch(meta.get("startTime"))))


def _scan_prompt_log(source: str) -> list[Session]:
    project = os.path.dirname(source)
    cwd = project_root(project, None)
    sessions: dict[str, Session] = {}
    for entry in _prompt_log_entries(source):
        sid = entry["sessionId"]
        session = sessions.get(sid)
        if session is None:
            session = sessions[sid] = Session(agent=NAME, native_id=sid, source=source, cwd=cwd,
                                              locator=sid, extra={"format": "prompt-log"})
        started = epoch(entry.get("timestamp"))
        if started and (session.started is None or started < session.started):
            session.started = started
        if not session.title and entry.get("type") == "user" and as_str(entry.get("message")):
            session.title = one_line(entry["message"])
    return list(sessions.values())


def _prompt_log_entries(source: str) -> list[dict]:
    doc = _read_document(source)
    return [e for e in as_list(doc) if isinstance(e, dict) and isinstance(e.get("sessionId"), str)]


def _read_document(path: str):
    """A whole-file JSON document, or None when the file is not one (or cannot be read, or is
    over FILE_LIMIT)."""
    try:
        return loads_native(read_whole(path))
    except (OSError, ValueError):
        return None


# the project root --------------------------------------------------------------------------------
def project_root(project_dir: str, project_hash: str | None) -> str | None:
    """The root of `tmp/<project>`: its `.project_root`, else the root `projects.json`
    registers under this folder, else the known root whose sha256 is `project_hash` (before
    v0.29 the folder was named after that hash, which is then the one to match)."""
    marker = _read_root(os.path.join(project_dir, ".project_root"))
    if marker:
        return marker
    gemini = os.path.dirname(os.path.dirname(project_dir))
    registry = _registry(gemini)
    name = os.path.basename(project_dir)
    for root, slug in registry.items():
        if slug == name:
            return root
    wanted = project_hash or (name if re.fullmatch(r"[0-9a-f]{64}", name) else None)
    if wanted:
        for root in _known_roots(gemini, registry):
            if sha256(root.encode()).hexdigest() == wanted:
                return root
    return None


def _read_root(path: str) -> str | None:
    try:
        with open_binary(path) as handle:
            text = handle.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text if absolute_path(text) else None


def _registry(gemini: str) -> dict:
    doc = _read_document(os.path.join(gemini, "projects.json"))
    projects = as_dict(as_dict(doc).get("projects"))
    return {root: slug for root, slug in projects.items() if absolute_path(root) and isinstance(slug, str)}


def _known_roots(gemini: str, registry: dict) -> list[str]:
    roots = list(registry)
    for area in ("tmp", "history"):
        base = os.path.join(gemini, area)
        for name in listdir(base):
            root = _read_root(os.path.join(base, name, ".project_root"))
            if root and root not in roots:
                roots.append(root)
    return roots


# reading a conversation --------------------------------------------------------------------------
class Conversation:
    """One chat file read: its metadata, messages and format."""

    def __init__(self, meta: dict, messages: list[dict], fmt: str, from_snapshot: set | None = None,
                 counts: dict | None = None):
        self.meta, self.messages, self.fmt = meta, messages, fmt
        self.from_snapshot = set() if from_snapshot is None else from_snapshot  # ids known only from `$set.messages`
        self.counts = {} if counts is None else counts  # resumes, rewinds, snapshots, unknown records


def load_conversation(path: str, builder: TrajectoryBuilder) -> Conversation:
    if path.endswith(".json"):
        try:
            data = read_whole(path)
        except TooLarge as exc:
            builder.warn(str(exc))
            return Conversation({}, [], "legacy-json")
        doc = _parsed(data)
        if isinstance(doc, dict):
            return Conversation(doc, _legacy_messages(doc), "legacy-json")
        salvaged = _salvage_legacy(data.decode("utf-8", "replace"))
        if salvaged is not None:
            builder.warn("the file is not complete JSON (truncated, or being rewritten): the "
                         f"{len(salvaged.messages)} complete message(s) before the damage were read")
            return salvaged
    return _replay_jsonl(path, builder)


def _legacy_messages(doc: dict) -> list[dict]:
    messages = doc.get("messages") if "messages" in doc else doc.get("history")
    return [m for m in as_list(messages) if isinstance(m, dict)]


def _parsed(data: bytes):
    try:
        return loads_native(data)
    except ValueError:
        return None


def _salvage_legacy(text: str) -> Conversation | None:
    """The metadata and every complete message of a legacy file cut short. Legacy files are
    pretty-printed with the metadata before `messages`, so both can be read up to the damage."""
    start = re.search(r'"messages"\s*:\s*\[', text)
    if not re.match(r"\s*\{", text) or not start:
        return None
    meta = {key: value for key, value in re.findall(r'^\s{2}"(\w+)"\s*:\s*"([^"\n]*)"', text[:start.start()], re.M)}
    messages = [m for m in complete_items(text, start.end()) if isinstance(m, dict)]
    return Conversation(meta, messages, "legacy-json")


def _replay_jsonl(path: str, builder: TrajectoryBuilder) -> Conversation:
    reader = JsonlReader(path)
    meta: dict = {}
    records: dict[str, dict] = {}
    order: dict[str, None] = {}   # message ids in place, as Gemini CLI's own Map keeps them
    from_snapshot: set = set()
    counts = {"resumes": -1, "rewinds": 0, "history_snapshots": 0, "unknown_records": 0}
    for record in reader:
        if isinstance(record.get("$rewindTo"), str):
            counts["rewinds"] += 1
            order = _rewind(order, record["$rewindTo"], builder)
        elif isinstance(record.get("id"), str):
            records[record["id"]] = record
            from_snapshot.discard(record["id"])
            order.setdefault(record["id"])
        elif isinstance(record.get("$set"), dict):
            update = dict(record["$set"])
            snapshot = update.pop("messages", None)
            meta.update(update)
            if isinstance(snapshot, list):
                counts["history_snapshots"] += 1
                order = _apply_snapshot(order, snapshot, records, from_snapshot)
        elif isinstance(record.get("sessionId"), str):
            counts["resumes"] += 1
            meta.update({k: v for k, v in record.items() if k != "startTime" or "startTime" not in meta})
        else:
            counts["unknown_records"] += 1
    for problem in reader.problems():
        builder.warn(problem)
    counts["resumes"] = max(counts["resumes"], 0)
    return Conversation(meta, [records[mid] for mid in order], "jsonl",
                        {mid for mid in from_snapshot if mid in order}, counts)


def _rewind(order: dict, target: str, builder: TrajectoryBuilder) -> dict:
    ids = list(order)
    if target in order:
        return dict.fromkeys(ids[:ids.index(target)])
    builder.warn(f"a rewind names message {target!r}, which the session does not hold: as Gemini "
                 "CLI does, every earlier message was dropped")
    return {}


def _apply_snapshot(order: dict, snapshot: list, records: dict, from_snapshot: set) -> dict:
    """Messages only the snapshot has are inserted after the snapshot message before them (or,
    for a leading run, before the first snapshot message already in place)."""
    ids = []
    for message in snapshot:
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            mid = message["id"]
            if mid not in records:   # a known message keeps its record, or its first copy
                records[mid] = message
                from_snapshot.add(mid)
            ids.append(mid)
    result = list(order)
    present = set(result)
    anchor, leading = None, []
    for mid in ids:
        if mid in present:
            if leading:
                at = result.index(mid)
                result[at:at] = leading
                present.update(leading)
                leading = []
            anchor = mid
        elif anchor is None:
            leading.append(mid)
        else:
            result.insert(result.index(anchor) + 1, mid)
            present.add(mid)
            anchor = mid
    result.extend(mid for mid in leading if mid not in present)
    return dict.fromkeys(result)


# messages ----------------------------------------------------------------------------------------
def _kind(message: dict) -> str:
    return as_str(message.get("type")) or as_str(message.get("role")) or "unknown"


def _parts(message: dict) -> list[dict]:
    return parts_of(message.get("content") if "content" in message else message.get("parts"))


def _raw_time(message: dict):
    return message.get("timestamp") if message.get("timestamp") is not None else message.get("ts")


def _timestamp(message: dict) -> str | None:
    return iso(_raw_time(message))


def _prompt_text(message: dict) -> str:
    """What the human typed in a user message ("" for injected context or tool responses)."""
    if _kind(message) != "user":
        return ""
    text = visible_text(parts_of(message.get("displayContent")) or _parts(message))
    return "" if text.startswith((SESSION_CONTEXT, STATE_SNAPSHOT)) else text


def _reasoning(message: dict, parts: list[dict]) -> str:
    """`thoughts[]` as the model wrote them (`**subject**` then the description), then any
    thought parts of a history snapshot."""
    pieces = []
    for thought in as_list(message.get("thoughts")):
        if isinstance(thought, dict):
            subject, description = as_str(thought.get("subject")), as_str(thought.get("description"))
            pieces.append("\n\n".join(t for t in (subject and f"**{subject}**", description) if t))
    pieces.append(thought_text(parts))
    return "\n\n".join(p for p in pieces if p)


class _Translation:
    """Turns a conversation's messages into steps on one builder."""

    def __init__(self, builder: TrajectoryBuilder, spawned: dict | None = None):
        self.builder = builder
        self.spawned = spawned or {}   # call id -> subagent refs
        self.answered: set = set()     # call ids that have their result

    def messages(self, conversation: Conversation) -> None:
        for message in conversation.messages:
            extra = {"from_history_snapshot": True} if message.get("id") in conversation.from_snapshot else None
            kind = _kind(message)
            if kind == "user":
                self.user(message, extra)
            elif kind in AGENT_TYPES:
                self.agent(message, extra)
            else:
                self.builder.system(message_content(_parts(message)), _timestamp(message),
                                    extra={"kind": kind, **(extra or {})})

    def user(self, message: dict, extra: dict | None) -> None:
        parts, at = _parts(message), _timestamp(message)
        for response in function_responses(parts):
            self.response(response, at)
        shown = parts_of(message.get("displayContent")) or parts
        content = message_content(shown)
        if not content:
            return
        head = visible_text(shown)
        if head.startswith(SESSION_CONTEXT):
            self.builder.system(content, at, extra={"kind": "session_context", **(extra or {})})
        elif head.startswith(STATE_SNAPSHOT):
            step = self.builder.system("The chat history was compressed into this summary.", at, extra={
                "kind": "compression_summary", **(extra or {}),
                "context_management": {"type": "compaction", "boundary": "replace"}})
            self.builder.observe(step, content)
        else:
            self.builder.user(content, at, extra=extra)

    def agent(self, message: dict, extra: dict | None) -> None:
        parts = _parts(message)
        tokens = as_dict(message.get("tokens"))
        inference = not extra   # a message only a history snapshot holds may be synthetic
        step = self.builder.agent(
            visible_text(parts), _timestamp(message), model_name=as_str(message.get("model")),
            reasoning=_reasoning(message, parts) or None,
            metrics=usage_metrics(tokens.get("input"), tokens.get("output"), tokens.get("cached"),
                                  tokens.get("thoughts"), tokens.get("tool"), tokens.get("total")),
            llm_call_count=1 if inference else None, extra=extra)
        for call in as_list(message.get("toolCalls")):
            if isinstance(call, dict):
                self.tool_call(step, call)
        for call in function_calls(parts):   # calls of a history snapshot: results follow
            if not (as_str(call.get("id")) and self.builder.has_call(call["id"])):
                self.builder.tool_call(step, as_str(call.get("id")), as_str(call.get("name")), call.get("args"))

    def tool_call(self, step, call: dict) -> None:
        """A `toolCalls[]` record: the call and its embedded result."""
        cid = self.builder.tool_call(step, as_str(call.get("id")), as_str(call.get("name")), call.get("args"))
        parts = parts_of(call.get("result"))
        responses = function_responses(parts)
        others = [p for p in parts if "functionResponse" not in p]
        if responses:
            content, is_error = response_content(responses[0], others)
        else:
            content, is_error = message_content(others) or as_str(call.get("resultDisplay")), False
        status = as_str(call.get("status"))
        subagents = self.spawned.get(cid)
        if not responses and not content and not subagents and status in (None, "success"):
            return  # no result recorded yet (a function response may bring it)
        result_extra = shell_failure(as_str(call.get("name")), content)
        if is_error or status == "error":
            result_extra["is_error"] = True
        if status and status != "success":
            result_extra["status"] = status
        error = as_str(call.get("error"))
        if error and error != content:
            result_extra["error"] = error
        self.builder.tool_result(cid, content if content or responses else None, extra=result_extra,
                                 subagents=subagents)  # an empty output is an output
        self.answered.add(cid)

    def response(self, response: dict, at: str | None) -> None:
        """A function response sent back to the model: a result for a call still waiting for
        one, nothing for a call already answered (Gemini CLI records both), else an orphan."""
        cid = as_str(response.get("id"))
        if cid and cid in self.answered:
            return
        content, is_error = response_content(response)
        extra = shell_failure(as_str(response.get("name")), content)
        if is_error:
            extra["is_error"] = True
        extra = extra or None
        if cid and self.builder.has_call(cid):
            self.builder.tool_result(cid, content, extra=extra, subagents=self.spawned.get(cid))
            self.answered.add(cid)
        else:
            step = self.builder.system(f"result of {as_str(response.get('name')) or 'a tool'} "
                                       "with no matching call", at, extra={"kind": "orphan_tool_result"})
            self.builder.observe(step, content, extra=extra)


# sub-agents --------------------------------------------------------------------------------------
def shell_failure(name: str | None, content) -> dict:
    """`{exit_code, is_error}` of a shell command that failed. Gemini CLI marks the call a
    "success" whatever the command's exit status, which it writes only into the output
    (`Exit Code: 2`, after the command's own output: the last such line counts)."""
    if name != SHELL_TOOL or not isinstance(content, str):
        return {}
    codes = _EXIT_CODE.findall(content)
    if not codes or int(codes[-1]) == 0:
        return {}
    return {"is_error": True, "exit_code": int(codes[-1])}


def _subagent_documents(source: str, session_id: str) -> list[tuple[dict, dict]]:
    """(document, metadata) of every sub-agent of a session, oldest first."""
    found = []
    for directory in _subagent_dirs(source, session_id):
        for path in _subagent_files(directory):
            builder = TrajectoryBuilder(ATIF_NAME)
            conversation = load_conversation(path, builder)
            builder.session_id = as_str(conversation.meta.get("sessionId")) or os.path.splitext(os.path.basename(path))[0]
            _Translation(builder).messages(conversation)
            builder.model_name = _first_model(conversation.messages)
            builder.extra.update(_root_extra(conversation))
            found.append((builder.build(), conversation.meta))
    found.sort(key=lambda item: epoch(item[1].get("startTime")) or 0)
    return found


def _spawning_call(messages: list[dict], started: float | None) -> str | None:
    """The one tool call running when a sub-agent started: between its message and the call's
    own (completion) timestamp. None when no call, or more than one, fits."""
    if started is None:
        return None
    fitting = []
    for index, message in enumerate(messages):
        begin = epoch(message.get("timestamp"))
        following = next((epoch(m.get("timestamp")) for m in messages[index + 1:] if epoch(m.get("timestamp"))), None)
        for call in as_list(message.get("toolCalls")):
            if isinstance(call, dict) and as_str(call.get("id")) and begin is not None:
                end = epoch(call.get("timestamp")) or following or float("inf")
                if begin <= started <= end:
                    fitting.append(call["id"])
    return fitting[0] if len(fitting) == 1 else None


def _embed_subagents(builder: TrajectoryBuilder, source: str, conversation: Conversation, session_id: str) -> dict:
    spawned: dict = {}
    unlinked = []
    for doc, meta in _subagent_documents(source, session_id):
        trajectory_id = doc.get("session_id") or f"subagent-{len(builder.subagents) + 1}"
        refs = builder.embed(doc, trajectory_id)
        call = _spawning_call(conversation.messages, epoch(meta.get("startTime")))
        if call:
            spawned.setdefault(call, []).extend(refs)
        else:
            unlinked.append(trajectory_id)
    if unlinked:
        builder.extra["subagents_without_spawning_call"] = unlinked
    return spawned


# translation -------------------------------------------------------------------------------------
def _first_model(messages: list[dict]) -> str | None:
    return next((as_str(m.get("model")) for m in messages
                 if _kind(m) in AGENT_TYPES and as_str(m.get("model"))), None)


def _root_extra(conversation: Conversation) -> dict:
    meta = conversation.meta
    extra = {"format": conversation.fmt, "project_hash": as_str(meta.get("projectHash")),
             "kind": as_str(meta.get("kind")), "summary": as_str(meta.get("summary")),
             "directories": meta.get("directories") if as_list(meta.get("directories")) else None}
    extra.update({k: v for k, v in conversation.counts.items() if v})
    return {k: v for k, v in extra.items() if v is not None}


def translate(session: Session, env) -> dict:
    builder = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id)
    if session.extra.get("format") == "prompt-log":
        _translate_prompt_log(builder, session)
        return builder.build()
    conversation = load_conversation(session.source, builder)
    if _unclaimed(session.source):
        builder.warn(f"a sub-agent transcript in chats/{os.path.basename(os.path.dirname(session.source))}/, "
                     "a folder named after no chat of this project: it is listed as a session of its own")
        spawned = {}
    else:
        session_id = as_str(conversation.meta.get("sessionId")) or session.native_id
        spawned = _embed_subagents(builder, session.source, conversation, session_id)
    _Translation(builder, spawned).messages(conversation)
    builder.model_name = _first_model(conversation.messages)
    builder.extra.update(_root_extra(conversation))
    return builder.build()


def _translate_prompt_log(builder: TrajectoryBuilder, session: Session) -> None:
    """A session known only from `logs.json`: the prompts, and nothing the agent did."""
    for entry in _prompt_log_entries(session.source):
        if entry["sessionId"] != session.native_id:
            continue
        text, at, kind = as_str(entry.get("message")) or "", iso(entry.get("timestamp")), entry.get("type")
        if kind == "user":
            builder.user(text, at)
        elif kind in AGENT_TYPES:
            builder.agent(text, at)
        else:
            builder.system(text, at, extra={"kind": str(kind)})
    builder.extra.update({"format": "prompt-log", "note": "Gemini CLI's prompt log (logs.json) "
                          "holds only what was typed: no chat file records this session"})
