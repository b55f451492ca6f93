"""Claude Code: `${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<sanitized cwd>/<session>.jsonl`.

One JSONL record per line, chained by uuid/parentUuid. An API response is streamed as several
`assistant` records sharing `message.id`, each with one content block and a repeated `usage`;
tool results come back in `user` records; sub-agents live in `<session>/subagents/agent-*.jsonl`
(older releases: sibling `agent-*.jsonl` files, or `isSidechain` records in the main file). A
sub-agent that was given the conversation (an aside question, `agent-aside_question-*`) repeats
its parent's records under the same uuids: they are the parent's, and not repeated. A user text
that opens with `<system-reminder>` blocks before typed words (an aside question's) is a system
step and a user step. Outputs too large for the transcript are spilled to
`<session>/tool-results/`.
"""

from __future__ import annotations

import glob
import os
import re

from core import compiledre, storefs
from agents.base import (JsonlReader, Session, TooLarge, as_dict, as_list, as_str, base_name, between, epoch,
                         head_records, home, iso, listdir_cached, one_line, outside_named_folder,
                         json_record, read_json_object, read_whole, reading, text_of, visible_paths, windows_path)
from atif.build import image_part, metrics, text_part, TrajectoryBuilder
from atif.serialize import dumps_text
from agents.titles import task_text

NAME = "claude"
PREFIX = "cl"
SESSIONS_PER_PROJECT = True  # one id in two project folders: two sessions (catalog.discover)
ATIF_NAME = "claude-code"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("claude", "--resume", "{id}"), "resume_prompt": ("claude", "-p", "--resume", "{id}", "{prompt}"),
       "start": ("claude", "{prompt}"), "start_prompt": ("claude", "-p", "{prompt}"), "checked": "2.1.332"}
VERSION = 4
APPENDS_ONLY = True  # transcripts only grow (catalog: a scan of a head that did not end stays true)

SKIPPED_TYPES = {"file-history-snapshot", "progress", "permission-mode", "mode",
                 "custom-title", "ai-title", "agent-name", "agent-setting", "last-prompt", "pr-link",
                 "frame-link", "worktree-state", "relocated", "bridge-session", "atis-latch",
                 "started", "result", "api-request", "api-request-shape", "api-request-blob",
                 "tools-used"}
QUIET_SYSTEM_SUBTYPES = {"turn_duration", "stop_hook_summary", "session_start", "bridge_status"}
SPILL_LIMIT = 64 * 1024 * 1024


# discovery ------------------------------------------------------------------------------------------
def roots(env) -> list[str]:
    """Every projects/ folder Claude Code may write to, without duplicates."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    bases = [p for p in configured.split(",") if p] if configured else [os.path.join(home(env), ".claude")]
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home(env), ".config")
    bases.append(os.path.join(xdg, "claude"))
    found, seen = [], set()
    for base in bases:
        path = os.path.join(os.path.expanduser(base), "projects")
        real = storefs.realpath(path)
        if real not in seen and storefs.isdir(path):
            seen.add(real)
            found.append(path)
    return found


def sources(env):
    """`<root>/*/*.jsonl` of every root, sorted, as glob gives them (no hidden name, folders
    only in the middle), listed with scandir: a glob costs twice as much."""
    for root in roots(env):
        found = []
        for folder in visible_paths(root, folders=True):
            found += [path for path in visible_paths(folder) if path.endswith(".jsonl")]
        yield from sorted(found)


def outside(source: str, scope, memo: dict) -> bool:
    """Whether the project folder holding a transcript shows that none of its transcripts ran
    in the project (`outside_named_folder`)."""
    return outside_named_folder(os.path.dirname(source), scope, memo, lambda: _first_cwd(source))


def _first_cwd(source: str) -> str | None:
    """The directory a transcript's head names first, as `scan` reads it."""
    try:
        for record in head_records(source, 64 * 1024):
            cwd = recorded_cwd(record)
            if cwd is not None:
                return cwd
    except Exception:  # unreadable: its folder's name decides
        return None
    return None


def parent_of_sidechain_file(source: str) -> str | None:
    """For a 2.0.x sub-agent file (`agent-<id>.jsonl` beside its parent), the parent's
    transcript, when it exists: the sub-agent is then part of that session, not one of its own."""
    if not os.path.basename(source).startswith("agent-"):
        return None
    head = next(head_records(source, 64 * 1024), {})
    parent = os.path.join(os.path.dirname(source), f"{head.get('sessionId')}.jsonl")
    return parent if isinstance(head.get("sessionId"), str) and storefs.exists(parent) else None


def native_id_of(source: str) -> str:
    """The id of a transcript's session, which its file is named after (`show ID` finds the
    transcript of an id without scanning the others)."""
    return os.path.basename(source)[: -len(".jsonl")]


def scan(source: str, env) -> list[Session]:
    if parent_of_sidechain_file(source):
        return []
    native_id = native_id_of(source)
    session = Session(agent=NAME, native_id=native_id, source=source, extra={"format": "jsonl"})
    queued = []  # the prompts enqueued, for a session that recorded no user record of them
    task = ""  # the first prompt that carries a task (titles.py), when the first one carries none

    def worth_parsing(line: bytes) -> bool:
        """Whether a record could still fill a field: once the time, directory and version are
        known, only an assistant's (the model), a user's prompt (the first message, the first
        task) or the agent's title, whose type the line names (a request blob of tens of
        kilobytes before the first answer is then skipped unparsed). A queue operation after
        the first record is kept unparsed: its prompt is wanted only when no user record gives
        a title (`first_queued`), and it names no directory (else it is parsed for that)."""
        if session.started is not None and b'"queue-operation"' in line and b'"cwd"' not in line:
            if not task:
                queued.append(line)
            return False
        if session.started is None or session.cwd is None or "version" not in session.extra:
            return True
        return ((session.model is None and (b'"assistant"' in line or b'"modelId"' in line))
                or (not task and (b'"user"' in line or b'-title"' in line)))

    for record in head_records(source, wanted=worth_parsing):
        if session.started is None:
            session.started = epoch(record.get("timestamp"))
        if session.cwd is None:
            session.cwd = recorded_cwd(record)
        if "version" in record and "version" not in session.extra and isinstance(record["version"], str):
            session.extra["version"] = record["version"]
        message = as_dict(record.get("message"))
        if session.model is None:
            model = starting_model(record) or (as_str(message.get("model")) if record.get("type") == "assistant" else None)
            if model and model != "<synthetic>":
                session.model = model
        if record.get("type") == "user" and not task and not record.get("isSidechain") \
                and not _tool_results(message.get("content")):
            prompt = prompt_text(text_of(message.get("content"), "\n"), record)
            session.title = session.title or one_line(prompt)
            task = one_line(task_text(prompt))
        if record.get("type") == "queue-operation":
            queued.append(record)  # its text is made only if no user record gives a title
        if record.get("type") in ("custom-title", "ai-title"):
            session.extra["native_title"] = native_title(record)
        if session.started and session.cwd and task and session.model:
            break
    if session.started is None:
        reading.open_ended = True  # the time of the last write: an append changes it
        session.started = storefs.stat(source).st_mtime
    session.title = session.title or one_line(first_queued(queued))
    if task and task != session.title:
        session.extra["task"] = task
    return [session]


def first_queued(records: list) -> str:
    """The first prompt the user typed among enqueued ones (queue operations, parsed or as
    their lines), "" when none."""
    parsed = (record if isinstance(record, dict) else json_record(record) or {} for record in records)
    texts = (prompt_text(text_of(record.get("content"), "\n"), record) for record in parsed
             if record.get("type") == "queue-operation" and record.get("operation") == "enqueue")
    return next((text for text in texts if text), "")


def _tool_results(content) -> bool:
    """Whether a user record's content is what tools returned (no prompt of the user's)."""
    return isinstance(content, list) and any(as_dict(block).get("type") == "tool_result" for block in content)


def native_title(record: dict) -> str | None:
    """The title Claude Code gave a session (ai-title) or the user did (custom-title)."""
    return as_str(record.get("customTitle") or record.get("aiTitle") or record.get("title"))


def recorded_cwd(record: dict) -> str | None:
    """The directory a record names (`project` in the oldest releases)."""
    cwd = record.get("cwd") or record.get("project")
    return cwd if isinstance(cwd, str) else None


def starting_model(record: dict) -> str | None:
    """The model a session starts with, as recent releases record it before the first answer
    (an attachment naming the model's identity): the listing need not read on to the answer,
    which comes after tens of kilobytes of tool lists and request blobs."""
    attachment = as_dict(record.get("attachment"))
    if record.get("type") != "attachment" or attachment.get("type") != "model":
        return None
    return as_str(as_dict(attachment.get("identity")).get("modelId"))


def dependencies(source: str, env) -> list[str]:
    """The transcript plus its sub-agent transcripts: a sub-agent that grows changes the document."""
    subagents = os.path.join(source[: -len(".jsonl")], "subagents")
    if not storefs.isdir(subagents):  # the common case, without a glob: discovery runs this per session
        return [source]
    return [source, *sorted(storefs.glob(os.path.join(glob.escape(subagents), "**", "*.jsonl"), recursive=True))]


def dependencies_of(sources: list, env) -> list[list[str]]:
    """`dependencies` of many transcripts, each folder listed once: only a transcript with a
    folder of its own beside it (`<id>/subagents/`) is looked into. Discovery asks this of
    every transcript, and two failed stats per transcript were most of its listing's cost."""
    folders: dict = {}
    found = []
    for source in sources:
        folder, name = os.path.split(source)
        if folder not in folders:
            folders[folder] = _subfolders(folder)
        own = folders[folder]
        found.append(dependencies(source, env) if own is None or name[: -len(".jsonl")] in own else [source])
    return found


def _subfolders(folder: str) -> set | None:
    """The names of the folders in `folder`; None when it cannot be listed."""
    try:
        with storefs.scandir(folder) as entries:
            return {entry.name for entry in entries if entry.is_dir()}
    except OSError:
        return None


# classification of user text ---------------------------------------------------------------------
_INJECTED_PREFIXES = (
    ("<local-command-stdout>", "command_output"), ("<local-command-stderr>", "command_output"),
    ("<local-command-caveat>", "meta"), ("Caveat: The messages below", "meta"),
    ("<system-reminder>", "reminder"), ("<task-notification>", "task_notification"),
    ("[Request interrupted by user", "interrupt"), ("Stop hook feedback:", "hook"),
    ("<user-prompt-submit-hook>", "hook"), ("<bash-stdout>", "command_output"),
    ("<bash-input>", "command"),
)


REMINDER_OPEN, REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"


def split_reminders(text: str) -> tuple[str, str]:
    """(the `<system-reminder>` blocks a user text opens with, the rest) when words follow them:
    the harness prepends reminders to what the human typed (Claude Code to an aside question,
    Factory Droid to a prompt). ("", text) when no words follow reminders."""
    start = end = _BLANK.match(text).end()
    while text.startswith(REMINDER_OPEN, end) and (close := text.find(REMINDER_CLOSE, end)) >= 0:
        end = _BLANK.match(text, close + len(REMINDER_CLOSE)).end()
    if end == start or end == len(text):
        return "", text
    return text[start:end].rstrip(), text[end:]


_BLANK = compiledre.compile(r"\s*")


def prompt_text(text: str, record: dict) -> str:
    """What the human typed in a user text, for a listing's first message ("" when the text is
    injected context); a slash command as `/name args`."""
    kind, text = classify_user_text(split_reminders(text)[1], record)
    return text if kind in (None, "command") and text.strip() else ""


def classify_user_text(text: str, record: dict) -> tuple[str | None, str]:
    """(kind, text) of a user record's text: kind None for what the human typed, "command" for a
    slash command (kept as a user step, rendered as `/name args`), else the kind of injected
    context it is."""
    if record.get("isCompactSummary"):
        return "compaction_summary", text
    stripped = text.lstrip()
    command = between(stripped, "<command-name>", "</command-name>") if stripped.startswith("<command-") else None
    if command is not None:
        args = between(stripped, "<command-args>", "</command-args>")
        return "command", (command.strip() + " " + (args.strip() if args else "")).strip()
    for prefix, kind in _INJECTED_PREFIXES:
        if stripped.startswith(prefix):
            return kind, text
    origin = as_dict(record.get("origin")).get("kind")
    if isinstance(origin, str) and origin not in ("user", "human"):
        return origin.replace("-", "_"), text
    if record.get("isMeta"):
        return "meta", text
    return None, text


# translation --------------------------------------------------------------------------------------
class _Context:
    """State shared by a session and its sub-agents while translating."""

    def __init__(self, session_dir: str):
        self.session_dir = session_dir
        self.counted_usage: set = set()   # (message id, request id) already in some step's metrics
        self.seen_messages: set = set()   # message ids of the parent, to spot replayed copies
        self.parent_uuids: set = set()    # uuids of the records the parent's transcript holds


class _Translation:
    """Feeds one transcript's records into a TrajectoryBuilder."""

    def __init__(self, builder: TrajectoryBuilder, context: _Context, is_subagent: bool = False):
        self.b = builder
        self.ctx = context
        self.is_subagent = is_subagent
        self.by_message: dict = {}        # message id -> agent step
        self.usage: dict = {}             # (message id, request id) -> last usage seen
        self.usage_step: dict = {}        # (message id, request id) -> step it belongs to
        self.seen_uuids: set = set()
        self.seen_calls: set = set()
        self.pending: list = []           # ids of calls still waiting for their result, in order
        self.step_of_record: dict = {}    # assistant record uuid -> its step
        self.parents: dict = {}           # record uuid -> parent uuid (the conversation tree)
        self.record_steps: list = []      # (step, uuid of a record it came from)
        self.last_uuid = None             # the newest user/assistant record: the tree's live leaf
        self.sidechains: dict = {}        # agentId -> records of an in-file sidechain
        self.agent_links: dict = {}       # agentId -> tool call id that spawned it
        self.compaction = None            # the last compaction step, awaiting its summary
        self.cost = None
        self.model = None
        self.version = None
        self.shared = 0                   # records of a sub-agent that are its parent's
        self.queued: list = []            # enqueued prompts no user record has held since

    def feed(self, record: dict) -> None:
        uuid = record.get("uuid")
        if not isinstance(uuid, (str, int)):  # an id of another type cannot identify a record
            uuid = None
        if uuid is not None:
            if uuid in self.seen_uuids:
                return
            self.seen_uuids.add(uuid)
        kind = as_str(record.get("type")) or as_str(as_dict(record.get("message")).get("role"))
        if self.version is None and isinstance(record.get("version"), str):
            self.version = record["version"]
        if record.get("isSidechain") and not self.is_subagent:
            self.sidechains.setdefault(as_str(record.get("agentId")) or "sidechain", []).append(record)
            return
        if self.is_subagent and uuid in self.ctx.parent_uuids:
            self.shared += 1  # the parent's conversation, which the sub-agent was given
            return
        self.note_git_and_mode(record)
        if uuid is not None and not self.is_subagent:
            self.ctx.parent_uuids.add(uuid)
        if isinstance(uuid, str):
            self.parents[uuid] = as_str(record.get("parentUuid")) or as_str(record.get("logicalParentUuid"))
            if kind in ("user", "assistant"):
                self.last_uuid = uuid
        before = self.b.step_count()
        self.dispatch(kind, record)
        if isinstance(uuid, str):
            self.record_steps.extend((step, uuid) for step in self.b.steps_since(before))

    def note_git_and_mode(self, record: dict) -> None:
        """The branches the session ran on (`gitBranch`, on every line) and the permission modes
        it ran in (`permissionMode` of the user's lines: plan, acceptEdits ...), each once, in
        order: `extra.git_branches` and `extra.modes`."""
        for key, name in (("gitBranch", "git_branches"), ("permissionMode", "modes")):
            value = as_str(record.get(key))
            if value and value != "HEAD":
                found = self.b.extra.setdefault(name, [])
                if value not in found and len(found) < 32:
                    found.append(value[:200])

    def dispatch(self, kind, record: dict) -> None:
        if kind == "assistant":
            self.assistant(record)
        elif kind == "user":
            self.user(record)
        elif kind == "system":
            self.system(record)
        elif kind == "attachment":
            self.attachment(record)
        elif kind == "tool_use":  # 1.x releases wrote calls and results as records of their own
            step = self.b.agent("", iso(record.get("timestamp")))
            self.b.tool_call(step, as_str(record.get("id")) or as_str(record.get("uuid")),
                             as_str(record.get("name")) or "unknown", record.get("input"))
            self.pending.append(step.calls[-1]["tool_call_id"])
        elif kind == "tool_result":
            output = record.get("output", record.get("content"))
            self.tool_result(record, {"tool_use_id": record.get("tool_use_id"), "content": output,
                                      "is_error": record.get("is_error")}, None)
        elif kind == "queue-operation":
            if record.get("operation") == "enqueue":
                self.queued.append(record)
        elif kind == "cost-state" and isinstance(record.get("totalCostUSD"), (int, float)):
            self.cost = record["totalCostUSD"]
        elif kind == "summary" and isinstance(record.get("summary"), str):
            self.b.extra.setdefault("native_title", record["summary"])
        elif kind in ("custom-title", "ai-title"):
            title = native_title(record)
            if title:
                self.b.extra["native_title"] = title
        elif kind not in SKIPPED_TYPES and kind is not None:
            note_skipped_type(self.b, kind)

    # assistant records: one step per message id ---------------------------------------------------
    def assistant(self, record: dict) -> None:
        message = as_dict(record.get("message"))
        model = as_str(message.get("model"))
        timestamp = iso(record.get("timestamp"))
        if model == "<synthetic>":  # written by Claude Code itself (API errors), not a model
            text = text_of(message.get("content"), "\n\n")
            self.b.system(text, timestamp, extra={"kind": "api_error" if record.get("isApiErrorMessage") else "synthetic"})
            return
        message_id = as_str(message.get("id")) or as_str(record.get("uuid")) or f"anon-{len(self.by_message)}"
        step = self.by_message.get(message_id)
        if step is None:
            copied = True if self.is_subagent and message_id in self.ctx.seen_messages else None
            native_id = as_str(message.get("id"))
            step = self.b.agent("", timestamp, model_name=model, llm_call_count=1, copied=copied,
                                extra={"message_id": native_id} if native_id else None)
            self.by_message[message_id] = step
            if not self.is_subagent:
                self.ctx.seen_messages.add(message_id)
        if model and self.model is None:
            self.model = model
        if isinstance(record.get("uuid"), str):
            self.step_of_record[record["uuid"]] = step
            self.record_steps.append((step, record["uuid"]))
        for block in as_list(message.get("content")):
            self.assistant_block(step, as_dict(block))
        if isinstance(message.get("content"), str):
            self.append_text(step, message["content"])
        usage = message.get("usage")
        if isinstance(usage, dict):
            key = (message_id, as_str(record.get("requestId")))
            self.usage[key] = usage
            self.usage_step.setdefault(key, step)

    def assistant_block(self, step, block: dict) -> None:
        kind = as_str(block.get("type"))
        if kind == "text":
            self.append_text(step, as_str(block.get("text")) or "")
        elif kind in ("thinking", "reasoning"):
            thought = as_str(block.get("thinking")) or as_str(block.get("text")) or ""
            if thought:
                step.reasoning = f"{step.reasoning}\n\n{thought}" if step.reasoning else thought
        elif kind in ("tool_use", "server_tool_use"):
            call_id = as_str(block.get("id"))
            if call_id and call_id in self.seen_calls:
                return  # replayed after a resume or compaction
            self.seen_calls.add(call_id)
            extra = {"server_tool": True} if kind == "server_tool_use" else None
            call_id = self.b.tool_call(step, call_id, as_str(block.get("name")) or "unknown",
                                       block.get("input"), extra)
            if kind == "tool_use":
                self.pending.append(call_id)
        elif kind and kind.endswith("_tool_result"):  # results of server tools (web search, ...)
            call_id = as_str(block.get("tool_use_id"))
            content = block.get("content")
            text = content if isinstance(content, str) else dumps_text(content)
            if not (call_id and self.b.tool_result(call_id, text)):
                self.b.observe(step, text, extra={"kind": kind})
        elif kind == "redacted_thinking":
            step.extra = {**(step.extra or {}), "redacted_thinking": True}
        elif kind == "image":
            self.append_text(step, "[image]")

    @staticmethod
    def append_text(step, text: str) -> None:
        if text:
            step.message = f"{step.message}\n\n{text}" if step.message else text

    # user records: prompts, tool results, injected context ---------------------------------------------
    def user(self, record: dict) -> None:
        message = as_dict(record.get("message"))
        content = message.get("content")
        timestamp = iso(record.get("timestamp"))
        agent_id = as_str(record.get("agentId")) or as_str(as_dict(record.get("toolUseResult")).get("agentId"))
        parts: list = []
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, str):
                parts.append(text_part(block))
            elif isinstance(block, dict):
                if block.get("type") == "tool_result":
                    self.tool_result(record, block, agent_id)
                elif block.get("type") == "image":
                    parts.append(image_from(block))
                elif block.get("type") == "text":
                    parts.append(text_part(as_str(block.get("text")) or ""))
                elif block.get("type") == "document":
                    parts.append(text_part(f"[document: {as_dict(block.get('source')).get('media_type', 'unknown')}]"))
        if parts:
            self.user_parts(record, parts, timestamp)

    def user_parts(self, record: dict, parts: list, timestamp) -> None:
        text = "\n\n".join(p["text"] for p in parts if p["type"] == "text")
        if not text.strip() and all(p["type"] == "text" for p in parts):
            return
        reminders, text = split_reminders(text)
        if reminders:
            self.b.system(reminders, timestamp, extra={"kind": "reminder"})
        kind, text = classify_user_text(text, record)
        if kind == "compaction_summary":
            self.compaction_summary(text, timestamp)
        elif kind in (None, "command"):
            self.queued.clear()  # the prompts typed meanwhile: this is the record that holds them
            has_images = any(p["type"] == "image" for p in parts)
            message = [p for p in parts if p["type"] == "image"] + [text_part(text)] if has_images else text
            self.b.user(message, timestamp, extra={"kind": "command"} if kind == "command" else None)
        else:
            self.b.system(text, timestamp, extra={"kind": kind})

    def tool_result(self, record: dict, block: dict, agent_id: str | None) -> None:
        call_id = as_str(block.get("tool_use_id")) or self.unanswered_call(record)
        if call_id in self.pending:
            self.pending.remove(call_id)
        content = result_content(block.get("content"))
        spilled = self.spilled_output(record, content)
        extra = {}
        if spilled is not None:
            content, extra["persisted_output_path"] = spilled
        if block.get("is_error"):
            extra["is_error"] = True
        tool_use_result = record.get("toolUseResult")
        if isinstance(tool_use_result, dict):
            if tool_use_result.get("interrupted"):
                extra["interrupted"] = True
            if isinstance(tool_use_result.get("stderr"), str) and tool_use_result["stderr"]:
                extra["stderr"] = tool_use_result["stderr"]
        if agent_id:
            extra["agent_id"] = agent_id
            self.agent_links.setdefault(agent_id, call_id)
        if not self.b.tool_result(call_id, content, extra):
            self.b.warn("tool results without a matching tool call were kept as system steps")
            step = self.b.system(f"result of tool call {call_id or '(no id)'}", iso(record.get("timestamp")),
                                 extra={"kind": "orphan_tool_result"})
            self.b.observe(step, content, extra)

    def unanswered_call(self, record: dict) -> str:
        """For a result recorded without its call's id: the first unanswered call of the
        assistant record it names (`sourceToolAssistantUUID`), else the oldest unanswered one."""
        step = self.step_of_record.get(as_str(record.get("sourceToolAssistantUUID")) or "")
        for call_id in self.pending:
            if step is None or any(c["tool_call_id"] == call_id for c in step.calls):
                return call_id
        return ""

    def spilled_output(self, record: dict, content) -> tuple[str, str] | None:
        """Outputs too large for the transcript are saved under tool-results/: read them back."""
        path = as_str(as_dict(record.get("toolUseResult")).get("persistedOutputPath"))
        if path is None and isinstance(content, str) and "<persisted-output>" in content:
            found = re.search(r"Full output saved to: (\S+)", content)
            path = found.group(1) if found else None
        if not path:
            return None
        local = os.path.join(self.ctx.session_dir, "tool-results", base_name(path))
        for candidate in (local,) if windows_path(path) else (path, local):
            try:
                return read_whole(candidate, SPILL_LIMIT).decode("utf-8", "replace"), path
            except (OSError, TooLarge):
                continue
        self.b.warn(f"a spilled tool output could not be read back: {path}")
        return None

    # system records and attachments --------------------------------------------------------------------
    def system(self, record: dict) -> None:
        subtype = as_str(record.get("subtype")) or "system"
        timestamp = iso(record.get("timestamp"))
        if subtype in ("compact_boundary", "microcompact_boundary"):
            meta = as_dict(record.get("compactMetadata") or record.get("microcompactMetadata"))
            kind = "compaction" if subtype == "compact_boundary" else "microcompaction"
            boundary = "replace" if subtype == "compact_boundary" else "truncate"
            detail = ", ".join(f"{k}: {v}" for k, v in meta.items() if isinstance(v, (str, int)))
            self.compaction = self.b.system(
                f"Context {kind}" + (f" ({detail})" if detail else ""), timestamp,
                extra={"kind": subtype, "context_management": {"type": kind, "boundary": boundary}})
            return
        text = text_of(record.get("content"), "\n")
        if text.strip() and subtype not in QUIET_SYSTEM_SUBTYPES:
            self.b.system(text, timestamp, extra={"kind": subtype})

    def compaction_summary(self, text: str, timestamp) -> None:
        step = self.compaction
        if step is None or step.results:
            step = self.b.system("Context compaction", timestamp, extra={
                "kind": "compact_boundary", "context_management": {"type": "compaction", "boundary": "replace"}})
        self.b.observe(step, text)
        self.compaction = None

    def attachment(self, record: dict) -> None:
        attachment = as_dict(record.get("attachment"))
        if attachment.get("type") == "queued_command":  # typed by the user while the agent worked
            self.queued.clear()
            prompt = attachment.get("prompt")
            text = text_of(prompt, "\n") if not isinstance(prompt, str) else prompt
            if text.strip():
                self.b.user(text, iso(record.get("timestamp")), extra={"kind": "queued_command"})
        elif attachment.get("type") == "hook_blocking_error":
            text = as_str(as_dict(attachment.get("blockingError")).get("blockingError")) or \
                as_str(attachment.get("stderr")) or "hook blocked the action"
            self.b.system(text, iso(record.get("timestamp")), extra={"kind": "hook"})

    # closing -------------------------------------------------------------------------------------------
    def mark_abandoned_branches(self) -> None:
        """A rewind or an edited prompt forks the conversation tree: the branch left behind stays
        in the file. Steps off the path from the root to the live leaf get
        `extra.abandoned_branch`. Only a well-formed tree with a real fork is judged: one root,
        a node with two children, and a complete path (records written without parents, or a
        missing record, would make live steps look abandoned)."""
        roots = [u for u, parent in self.parents.items() if parent is None]
        children = {}
        for parent in self.parents.values():
            children[parent] = children.get(parent, 0) + 1
        if len(roots) != 1 or not any(n > 1 for p, n in children.items() if p is not None):
            return
        live, uuid = set(), self.last_uuid
        while uuid is not None:
            if uuid in live or uuid not in self.parents:
                return  # a cycle or a missing record
            live.add(uuid)
            uuid = self.parents[uuid]
        on_path = {id(step) for step, uuid in self.record_steps if uuid in live}
        for step, _ in self.record_steps:
            if id(step) not in on_path and step.source in ("user", "agent"):
                step.extra = {**(step.extra or {}), "abandoned_branch": True}

    def take_queued(self) -> None:
        """Prompts typed while the agent worked are enqueued (`queue-operation`), then recorded
        as a user record or a `queued_command` attachment when they are taken. One enqueued
        after the last of those never was (the session ended first; a session may hold nothing
        else): it is the human's all the same, kept at the end."""
        queued, self.queued = self.queued, []
        for record in queued:
            self.user({"timestamp": record.get("timestamp"), "message": {"content": record.get("content")}})

    def finish(self) -> None:
        """Metrics once per (message id, request id), from the last usage streamed for it."""
        self.take_queued()
        self.mark_abandoned_branches()
        for key, usage in self.usage.items():
            if key in self.ctx.counted_usage:
                continue
            self.ctx.counted_usage.add(key)
            self.usage_step[key].metrics = usage_metrics(usage)
        if self.model:
            self.b.model_name = self.b.model_name or self.model
        if self.version:
            self.b.version = self.version


def note_skipped_type(builder: TrajectoryBuilder, kind) -> None:
    """Name a record type the translation passed over in `extra.skipped_record_types`, once."""
    skipped = builder.extra.setdefault("skipped_record_types", [])
    if kind not in skipped:
        skipped.append(kind)


def translate_records(builder: TrajectoryBuilder, records, session_dir: str) -> None:
    """Translate records of Claude Code's shape into `builder` as `translate` does a
    transcript's (calls joined to results, injected text told from prompts, abandoned branches
    marked, usage counted once per API call), for other stores that write that shape (Factory
    Droid). Each record is translated as `records` yields it. Spilled tool outputs are looked
    for in `session_dir`/tool-results."""
    translation = _Translation(builder, _Context(session_dir))
    for record in records:
        translation.feed(record)
    translation.finish()


def usage_metrics(usage: dict) -> dict | None:
    def count(name):
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    fresh, cache_read, cache_write = count("input_tokens"), count("cache_read_input_tokens"), \
        count("cache_creation_input_tokens")
    extra = {"cache_creation_input_tokens": cache_write} if cache_write else None
    return metrics(prompt=fresh + cache_read + cache_write, completion=count("output_tokens"),
                   cached=cache_read, extra=extra)


def result_content(content):
    """A tool result's content as ATIF wants it: a string, or content parts when it has images."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "image" for b in content):
            return [image_from(b) if b.get("type") == "image" else text_part(text_of(b))
                    for b in content if isinstance(b, dict)]
        return text_of(content, "\n")
    return dumps_text(content)


def image_from(block: dict) -> dict:
    source = as_dict(block.get("source"))
    url = as_str(source.get("url")) if source.get("type") == "url" else None
    return image_part(as_str(source.get("media_type")), source.get("data"), url=url)


def translate(session: Session, env) -> dict:
    session_dir = session.source[: -len(".jsonl")]
    context = _Context(session_dir)
    builder = TrajectoryBuilder(ATIF_NAME, session.extra.get("version"), session.model,
                                session_id=session.native_id)
    main = _Translation(builder, context)
    reader = JsonlReader(session.source)
    first_session_id = None
    for record in reader:
        if first_session_id is None and isinstance(record.get("sessionId"), str):
            first_session_id = record["sessionId"]
        main.feed(record)
    for problem in reader.problems():
        builder.warn(problem)
    main.finish()
    if first_session_id and first_session_id != session.native_id:
        builder.extra["parent_session"] = first_session_id
    embed_subagents(session, main, context)
    doc = builder.build()
    if main.cost is not None:
        doc["final_metrics"]["total_cost_usd"] = round(main.cost, 10)
        doc["final_metrics"] = reorder_final(doc["final_metrics"])
    return doc


def reorder_final(fm: dict) -> dict:
    order = ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens",
             "total_cost_usd", "total_steps", "extra")
    return {k: fm[k] for k in order if k in fm}


# sub-agents ---------------------------------------------------------------------------------------
def subagent_files(session: Session) -> list[tuple[str, str, dict]]:
    """(agent id, path, meta) of every sub-agent transcript of a session: the per-session
    subagents/ folder (2.1.2+) and, for 2.0.x, sibling agent-*.jsonl files naming the session."""
    found = []
    for path in dependencies(session.source, None)[1:]:
        agent_id = os.path.basename(path)[len("agent-"):-len(".jsonl")] if \
            os.path.basename(path).startswith("agent-") else os.path.basename(path)[:-len(".jsonl")]
        found.append((agent_id, path, read_json_object(path[: -len(".jsonl")] + ".meta.json")))
    folder = os.path.dirname(session.source)
    for name in listdir_cached(folder):  # one listing per change of a folder of many sessions
        if name.startswith("agent-") and name.endswith(".jsonl"):
            path = os.path.join(folder, name)
            if next(head_records(path, 64 * 1024), {}).get("sessionId") == session.native_id:
                found.append((name[len("agent-"):-len(".jsonl")], path, {}))
    return found


def embed_subagents(session: Session, main: _Translation, context: _Context) -> None:
    groups = []
    for agent_id, path, meta in subagent_files(session):
        reader = JsonlReader(path)
        groups.append((agent_id, list(reader), meta, reader.problems()))
    for agent_id, records in main.sidechains.items():
        groups.append((agent_id, records, {}, []))
    prompts = spawn_prompts(main.b)
    for agent_id, records, meta, problems in groups:
        sub = TrajectoryBuilder(ATIF_NAME, main.b.version, None, session_id=session.native_id)
        translation = _Translation(sub, context, is_subagent=True)
        for record in records:
            translation.feed(record)
        translation.finish()
        for problem in problems:
            sub.warn(problem)
        if translation.shared:
            sub.extra["parent_records_skipped"] = translation.shared
        if not sub.step_count():
            continue  # only bookkeeping records (hooks, session start): nothing to show
        if meta.get("agentType"):
            sub.agent_extra["agent_type"] = meta["agentType"]
        refs = main.b.embed(sub.build(), f"agent-{agent_id}")
        call_id = as_str(meta.get("toolUseId")) or main.agent_links.get(agent_id) or \
            prompts.get(first_prompt(records))
        if not (call_id and main.b.attach_refs(call_id, refs)):
            step = main.b.system(f"sub-agent {agent_id}", None, extra={"kind": "subagent"})
            main.b.observe(step, meta.get("description") or "", subagents=refs)


def spawn_prompts(builder: TrajectoryBuilder) -> dict:
    """Prompt text -> id of the Task/Agent call that sent it, to link sub-agents recorded
    without an agent id."""
    return {call["arguments"].get("prompt"): call["tool_call_id"] for call in builder.all_calls()
            if isinstance(call["arguments"].get("prompt"), str)}


def first_prompt(records: list[dict]) -> str | None:
    for record in records:
        if record.get("type") == "user":
            content = as_dict(record.get("message")).get("content")
            if isinstance(content, str):
                return content
    return None


# the archive's interface (discovery/archive.py) ---------------------------------------------------------------
def archive_dependencies(session: Session, env) -> list[str]:
    """What translation reads besides `dependencies` (which discovery stats for every session,
    so it stays at the transcripts): the spilled tool outputs in `<session>/tool-results/`, the
    sub-agents' `.meta.json`, and the 2.0.x sibling `agent-*.jsonl` transcripts of the session."""
    spilled = os.path.join(glob.escape(session.source[: -len(".jsonl")]), "tool-results", "*")
    subagents = dependencies(session.source, env)[1:]
    siblings = [path for _, path, _ in subagent_files(session) if path not in subagents]
    metas = [path[: -len(".jsonl")] + ".meta.json" for path in subagents]
    return sorted(storefs.glob(spilled)) + [m for m in metas if storefs.isfile(m)] + siblings
