"""Kimi CLI (MoonshotAI/kimi-cli, Python) and its successor Kimi Code: JSONL logs per session.

Kimi CLI: `${KIMI_SHARE_DIR:-~/.kimi}/sessions/<md5(work dir)>/<session id>/` holds
`wire.jsonl` (every event, timestamped: `{timestamp, message: {type, payload}}` after a
`{type: "metadata", protocol_version}` line), `context.jsonl` (the model's message history, no
timestamps) and `state.json`. The oldest releases wrote only the context, as
`sessions/<md5>/<session id>.jsonl`. The work directory is not in the session files: it comes
from `kimi.json` (`work_dirs[].path`, whose md5 must equal the folder name, and
`session_to_workdir`), never from decoding the folder name. Wire events used: TurnBegin and
SteerInput (the user's input), StepBegin (one model call), ContentPart (text/think), ToolCall,
ToolResult, StatusUpdate (`token_usage` of the step: input_other, output, input_cache_read,
input_cache_creation), CompactionBegin, SubagentEvent (a sub-agent's events, nested, with its
`parent_tool_call_id`, `task_tool_call_id` in wire protocol 1.3: the spawning Task call, whose
result links its trajectory). A ToolResult whose `output` is empty holds in `message` what the
model was shown: that is its content. The recorder merges streamed parts, but events nested in a SubagentEvent
may be deltas, so consecutive parts of one kind are concatenated.

Kimi Code: `${KIMI_CODE_HOME:-~/.kimi-code}/sessions/wd_<slug>_<hash>/session_<uuid>/` holds
`state.json` (`workDir`, `title`, `agents`) and one `agents/<agent id>/wire.jsonl` per agent
(`main`, and one per sub-agent). Records are `{type, ..., time (ms)}`: `context.append_message`
(messages entering the context; `origin.kind` "user" is typed by the human, "injection" and
"system_trigger" come from the harness), `context.append_loop_event` (`step.begin`,
`content.part`, `tool.call`, `tool.result`, `step.end` with the step's usage), `usage.record`
(the same usage again, plus model calls outside the loop such as compaction), `llm.request`
(the model), `context.apply_compaction`. A sub-agent is linked by the `agent_id: <id>` line of
the spawning `Agent` call's result.
"""

from __future__ import annotations

import glob
import itertools
import os
import re

from core import compiledre, storefs
from agents.base import (JsonlReader, Session, as_dict, as_int, as_list, as_str, chat_content,
                         env_dir, epoch, head_records, iso, join_result, json_arguments, mtime,
                         one_line, read_json_object, text_of)
from atif.build import metrics, TrajectoryBuilder
from core.hashes import md5

NAME = "kimi"
PREFIX = "km"
ATIF_NAME = "kimi-cli"
VERSION = 2

CODE_AGENT_LINK = compiledre.compile(r"^agent_id:\s*(\S+)", re.MULTILINE)


# where sessions live ---------------------------------------------------------------------------
def share_dir(env) -> str:
    return env_dir(env, "KIMI_SHARE_DIR", ".kimi")


def code_home(env) -> str:
    return env_dir(env, "KIMI_CODE_HOME", ".kimi-code")


def sources(env):
    """One path per session: the CLI's wire.jsonl (else context.jsonl, else the oldest flat
    file), and Kimi Code's `agents/main/wire.jsonl`."""
    root = os.path.join(glob.escape(share_dir(env)), "sessions")
    found = []
    for folder in sorted(storefs.glob(os.path.join(root, "*", "*", ""))):
        for name in ("wire.jsonl", "context.jsonl"):
            if storefs.isfile(os.path.join(folder, name)):
                found.append(os.path.join(folder, name))
                break
    found += sorted(storefs.glob(os.path.join(root, "*", "*.jsonl")))
    code = os.path.join(glob.escape(code_home(env)), "sessions")
    found += sorted(storefs.glob(os.path.join(code, "*", "session_*", "agents", "main", "wire.jsonl")))
    return found


def is_code_layout(source: str) -> bool:
    return source.endswith(os.path.join("agents", "main", "wire.jsonl"))


def session_dir(source: str) -> str:
    if is_code_layout(source):
        return os.path.dirname(os.path.dirname(os.path.dirname(source)))
    if os.path.basename(source) in ("wire.jsonl", "context.jsonl"):
        return os.path.dirname(source)
    return source[: -len(".jsonl")]  # the oldest layout: sessions/<md5>/<id>.jsonl


def dependencies(source: str, env) -> list[str]:
    folder = session_dir(source)
    if is_code_layout(source):
        agents_dir = os.path.join(glob.escape(folder), "agents", "*", "wire.jsonl")
        return [os.path.join(folder, "state.json"), *sorted(storefs.glob(agents_dir))]
    found = [os.path.join(folder, name) for name in ("wire.jsonl", "context.jsonl", "state.json")]
    return [source, *found, os.path.join(share_dir(env), "kimi.json")]


def native_id_of(source: str) -> str:
    """The session's id, which its folder (or, in the oldest layout, its file) is named after."""
    return os.path.basename(session_dir(source)).removeprefix("session_" if is_code_layout(source) else "")


def work_dir_of(source: str) -> str | None:
    """A CLI session's work directory, from the kimi.json of its store: the recorded mapping of
    the session, or the work dir whose md5 is the session's folder name (checked, not decoded)."""
    folder = session_dir(source)
    hash_folder = os.path.dirname(folder)
    by_session, by_hash = _work_dirs(os.path.join(os.path.dirname(os.path.dirname(hash_folder)), "kimi.json"))
    return by_session.get(os.path.basename(folder)) or by_hash.get(os.path.basename(hash_folder))


_kimi_json: dict = {}  # kimi.json's path -> (its stat, session -> work dir, md5 -> work dir)


def _work_dirs(path: str) -> tuple[dict, dict]:
    """kimi.json's two mappings, read once per version of the file (every session of the store
    is looked up in them)."""
    try:
        st = storefs.stat(path)
        version = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        version = None
    kept = _kimi_json.get(path)
    if kept is None or kept[0] != version:
        meta = read_json_object(path)
        by_session = {key: value for key, value in as_dict(meta.get("session_to_workdir")).items()
                      if as_str(value)}
        by_hash: dict = {}
        for entry in as_list(meta.get("work_dirs")):
            work_dir = as_str(as_dict(entry).get("path"))
            if work_dir:
                by_hash.setdefault(md5(work_dir.encode("utf-8", "surrogatepass")).hexdigest(), work_dir)
        kept = _kimi_json[path] = (version, by_session, by_hash)
    return kept[1], kept[2]


def outside(source: str, scope, memo: dict) -> bool:
    """Whether kimi.json puts a CLI session's work directory outside the project (`scope`); a
    Kimi Code session's state.json names its own, which its scan reads."""
    if is_code_layout(source):
        return False
    work_dir = work_dir_of(source)
    return work_dir is not None and not scope.holds(work_dir)


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    if is_code_layout(source):
        return [_scan_code(source)]
    return [_scan_cli(source)]


def _scan_cli(source: str) -> Session:
    folder = session_dir(source)
    native_id = native_id_of(source)
    records = head_records(source)  # read up to the first prompt only
    title, started, fmt = "", None, "context"
    if os.path.basename(source) == "wire.jsonl":
        first = next(records, None)
        fmt = f"wire-{as_dict(first).get('protocol_version', 'unknown')}" if first is not None else "wire"
        for record in itertools.chain([first] if first is not None else [], records):
            started = started or epoch(record.get("timestamp"))
            message = as_dict(record.get("message"))
            if message.get("type") == "TurnBegin":
                title = one_line(text_of(as_dict(message.get("payload")).get("user_input")))
                break
    else:
        first = next((r for r in records if r.get("role") == "user"), {})
        title = one_line(text_of(first.get("content")))
    state = read_json_object(os.path.join(folder, "state.json"))
    return Session(agent=NAME, native_id=native_id, source=source, started=started or mtime(source),
                   cwd=work_dir_of(source),
                   title=title or one_line(as_str(state.get("custom_title")) or ""),
                   extra={"format": fmt})


def _scan_code(source: str) -> Session:
    folder = session_dir(source)
    state = read_json_object(os.path.join(folder, "state.json"))
    title, model, started, version = "", None, None, "unknown"
    for record in head_records(source):
        kind = record.get("type")
        if kind == "metadata":
            version = record.get("protocol_version", version)
            started = epoch(record.get("created_at"))
        elif kind in ("config.update", "llm.request") and not model:
            model = as_str(record.get("modelAlias")) or as_str(record.get("model"))
        elif kind == "context.append_message" and not title:
            message = as_dict(record.get("message"))
            if message.get("role") == "user" and typed_by_user(message):
                title = one_line(text_of(message.get("content")))
        if title and model:
            break
    native_id = native_id_of(source)
    return Session(agent=NAME, native_id=native_id, source=source,
                   started=started or epoch(state.get("createdAt")) or mtime(source),
                   cwd=as_str(state.get("workDir")) or None,
                   title=title or one_line(as_str(state.get("title")) or ""), model=model,
                   extra={"format": f"kimi-code-wire-{version}"})


def typed_by_user(message: dict) -> bool:
    """A Kimi Code user message the human typed (no origin in early releases), not one the
    harness injected (`injection`, `system_trigger`)."""
    return as_dict(message.get("origin")).get("kind") in (None, "user")


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    builder = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id, model_name=session.model)
    reader = JsonlReader(session.source)
    if is_code_layout(session.source):
        _CodeWire(builder, os.path.dirname(os.path.dirname(session.source))).run(reader)
    elif os.path.basename(session.source) == "wire.jsonl":
        _CliWire(builder).run(reader)
        if builder.step_count() == 0:
            _fallback_to_context(builder, session)
    else:
        _CliContext(builder).run(reader)
    for problem in reader.problems():
        builder.warn(f"{os.path.basename(session.source)}: {problem}")
    builder.extra["format"] = session.extra.get("format")
    return builder.build()


def _fallback_to_context(builder: TrajectoryBuilder, session: Session) -> None:
    """A wire log without turns (interrupted before the first event was recorded): the context
    file still holds the conversation."""
    context = os.path.join(session_dir(session.source), "context.jsonl")
    if storefs.isfile(context):
        builder.warn("wire.jsonl holds no turns; the conversation was read from context.jsonl")
        reader = JsonlReader(context)
        _CliContext(builder).run(reader)
        for problem in reader.problems():
            builder.warn(f"context.jsonl: {problem}")


class _Parts:
    """The text and thinking of one model call, assembled as they arrive."""

    def __init__(self, merge_consecutive: bool):
        self.merge = merge_consecutive
        self.blocks: list[list] = []  # [kind, text]

    def add(self, kind: str, text: str) -> None:
        if self.merge and self.blocks and self.blocks[-1][0] == kind:
            self.blocks[-1][1] += text
        else:
            self.blocks.append([kind, text])

    def joined(self, kind: str) -> str:
        return "\n\n".join(text for k, text in self.blocks if k == kind and text)


class _StepState:
    """The agent step of the model call in progress: created at its first content, updated as
    more parts, calls and its usage arrive (usage may come after the tool results)."""

    def __init__(self, builder: TrajectoryBuilder, merge_consecutive: bool):
        self.builder = builder
        self.merge = merge_consecutive
        self.step = None
        self.parts = _Parts(merge_consecutive)

    def begin(self) -> None:
        self.step, self.parts = None, _Parts(self.merge)

    def ensure(self, when, model):
        if self.step is None:
            self.step = self.builder.agent("", when, model_name=model, llm_call_count=1)
        return self.step

    def add_part(self, kind: str, text: str, when, model) -> None:
        step = self.ensure(when, model)
        self.parts.add(kind, text)
        step.message = self.parts.joined("text")
        step.reasoning = self.parts.joined("think") or None

    def set_extra(self, **fields) -> None:
        if self.step is not None:
            found = {k: v for k, v in fields.items() if v}
            if found:
                self.step.extra = {**(self.step.extra or {}), **found}


def kimi_metrics(usage, fresh_key: str, output_key: str, read_key: str, write_key: str):
    usage = as_dict(usage)
    fresh = as_int(usage.get(fresh_key))
    if fresh is None:
        return None
    read, write = as_int(usage.get(read_key)) or 0, as_int(usage.get(write_key)) or 0
    return metrics(prompt=fresh + read + write, completion=as_int(usage.get(output_key)), cached=read,
                   extra={"cache_write_tokens": write} if write else None)


# Kimi CLI: wire.jsonl ----------------------------------------------------------------------------
CLI_IGNORED = {"TurnEnd", "StepInterrupted", "CompactionEnd", "HookTriggered", "HookResolved",
               "MCPLoadingBegin", "MCPLoadingEnd", "Notification", "ApprovalRequest",
               "ApprovalResponse", "ApprovalRequestResolved", "QuestionRequest", "QuestionResponse",
               "ToolCallRequest", "ToolCallPart", "PlanDisplay"}


class _CliWire:
    """Kimi CLI wire events to steps. Also used, recursively, for a sub-agent's nested events."""

    def __init__(self, builder: TrajectoryBuilder):
        self.builder = builder
        self.current = _StepState(builder, merge_consecutive=True)
        self.subagents: dict[str, tuple[TrajectoryBuilder, "_CliWire", dict]] = {}

    def run(self, reader) -> None:
        for record in reader:
            if record.get("type") == "metadata":
                continue
            message = as_dict(record.get("message"))
            self.event(as_str(message.get("type")) or "", as_dict(message.get("payload")),
                       iso(record.get("timestamp")), record.get("timestamp"))
        self.embed_leftovers()

    def event(self, kind: str, payload: dict, when, raw_time=None) -> None:
        handler = getattr(self, f"on_{kind}", None)
        if handler is not None:
            handler(payload, when, raw_time)
        elif kind not in CLI_IGNORED:
            self.builder.warn(f"unknown wire event {kind!r} skipped")

    def on_TurnBegin(self, payload, when, _):
        self.current.begin()
        self.builder.user(chat_content(payload.get("user_input")), when)

    def on_SteerInput(self, payload, when, _):
        self.current.begin()
        self.builder.user(chat_content(payload.get("user_input")), when, extra={"kind": "steer"})

    def on_StepBegin(self, payload, when, _):
        self.current.begin()

    def on_ContentPart(self, payload, when, _):
        kind = payload.get("type")
        if kind in ("text", "think"):
            self.current.add_part(kind, as_str(payload.get(kind)) or "", when, self.builder.model_name)

    def on_ToolCall(self, payload, when, _):
        step = self.current.ensure(when, self.builder.model_name)
        function = as_dict(payload.get("function"))
        self.builder.tool_call(step, as_str(payload.get("id")), as_str(function.get("name")) or "",
                               json_arguments(function.get("arguments")))

    def on_StatusUpdate(self, payload, when, _):
        usage = kimi_metrics(payload.get("token_usage"), "input_other", "output", "input_cache_read",
                             "input_cache_creation")
        if usage is not None:
            self.current.ensure(when, self.builder.model_name).metrics = usage
            self.current.set_extra(message_id=as_str(payload.get("message_id")))

    def on_ToolResult(self, payload, when, _):
        call_id = as_str(payload.get("tool_call_id")) or ""
        value = as_dict(payload.get("return_value"))
        content, message = chat_content(value.get("output")), as_str(value.get("message")) or None
        if not content and message:  # what the model was shown (`File successfully edited…`)
            content, message = message, None
        extra = {k: v for k, v in {"is_error": True if value.get("is_error") else None,
                                   "message": message}.items() if v}
        refs = self.take_subagent(call_id)
        join_result(self.builder, call_id, content, when, extra, subagents=refs)

    def on_CompactionBegin(self, payload, when, _):
        self.builder.system("(the context was compacted)", when, extra={"kind": "compaction"})

    def on_SubagentEvent(self, payload, when, raw_time):
        key = (as_str(payload.get("parent_tool_call_id")) or as_str(payload.get("task_tool_call_id"))
               or as_str(payload.get("agent_id")) or "subagent")
        if key not in self.subagents:
            sub = TrajectoryBuilder(ATIF_NAME, session_id=as_str(payload.get("agent_id")))
            self.subagents[key] = (sub, _CliWire(sub), {"agent_id": payload.get("agent_id"),
                                                        "subagent_type": payload.get("subagent_type")})
        _, wire, _ = self.subagents[key]
        event = as_dict(payload.get("event"))
        wire.event(as_str(event.get("type")) or "", as_dict(event.get("payload")), when, raw_time)

    def take_subagent(self, call_id: str) -> list | None:
        entry = self.subagents.pop(call_id, None)
        if entry is None:
            return None
        sub, wire, info = entry
        wire.embed_leftovers()
        sub.agent_extra = {k: v for k, v in info.items() if v}
        trajectory_id = f"{self.builder.session_id}/{info.get('agent_id') or call_id}"
        return self.builder.embed(sub.build(), trajectory_id)

    def embed_leftovers(self) -> None:
        """Sub-agents whose spawning call never got a result (interrupted): still embedded."""
        for key in list(self.subagents):
            refs = self.take_subagent(key)
            step = self.builder.system(f"sub-agent {key} (its spawning call has no result)",
                                       extra={"kind": "subagent"})
            self.builder.observe(step, "", subagents=refs)


# Kimi CLI: context.jsonl (no wire log) -----------------------------------------------------------
class _CliContext:
    """The model's message history: no timestamps, no usage, but every message."""

    def __init__(self, builder: TrajectoryBuilder):
        self.builder = builder

    def run(self, reader) -> None:
        for record in reader:
            role = record.get("role")
            if role == "_system_prompt":
                self.builder.system(as_str(record.get("content")) or "", extra={"kind": "system_prompt"})
            elif role == "user":
                self.builder.user(chat_content(record.get("content")))
            elif role == "assistant":
                self.assistant(record)
            elif role == "tool":
                self.tool(record)
            elif not (isinstance(role, str) and role.startswith("_")):
                self.builder.warn(f"context message with unknown role {role!r} skipped")

    def assistant(self, record: dict) -> None:
        content = record.get("content")
        parts = _Parts(merge_consecutive=False)
        if isinstance(content, str):
            parts.add("text", content)
        for part in as_list(content):
            part = as_dict(part)
            if part.get("type") in ("text", "think"):
                parts.add(part["type"], as_str(part.get(part["type"])) or "")
        step = self.builder.agent(parts.joined("text"), reasoning=parts.joined("think") or None,
                                  model_name=self.builder.model_name, llm_call_count=1)
        for call in as_list(record.get("tool_calls")):
            call, function = as_dict(call), as_dict(as_dict(call).get("function"))
            self.builder.tool_call(step, as_str(call.get("id")), as_str(function.get("name")) or "",
                                   json_arguments(function.get("arguments")))

    def tool(self, record: dict) -> None:
        call_id = as_str(record.get("tool_call_id")) or ""
        content = chat_content(record.get("content"))
        join_result(self.builder, call_id, content)


# Kimi Code: agents/<id>/wire.jsonl ---------------------------------------------------------------
CODE_IGNORED = {"tools.set_active_tools", "llm.tools_snapshot", "turn.prompt", "turn.steer",
                "turn.cancel", "turn.ended", "permission.set_mode", "permission.record_approval_result",
                "profile.bind", "plugin.session_start", "runtime.set_binding", "token_counting.measured",
                "token_counting.turn_recorded", "plan_mode.enter", "plan_mode.exit",
                "full_compaction.begin", "full_compaction.complete"}


class _CodeWire:
    """Kimi Code records to steps; sub-agents' own wire logs are embedded where spawned."""

    def __init__(self, builder: TrajectoryBuilder, agents_dir: str, depth: int = 0):
        self.builder = builder
        self.agents_dir = agents_dir
        self.depth = depth
        self.current = _StepState(builder, merge_consecutive=True)
        self.request_kind = "loop"
        self.pending_usage = None  # step.end usage not yet matched by its usage.record
        self.embedded: set[str] = set()

    def run(self, reader) -> None:
        for record in reader:
            kind = as_str(record.get("type")) or ""
            handler = getattr(self, "on_" + kind.replace(".", "_"), None)
            if handler is not None:
                handler(record, iso(record.get("time")))
            elif kind not in CODE_IGNORED:
                self.builder.warn(f"unknown record type {kind!r} skipped")

    def on_metadata(self, record, when):
        """The header; its protocol version is the session's format (scan)."""

    def on_config_update(self, record, when):
        self.builder.model_name = as_str(record.get("modelAlias")) or self.builder.model_name
        if as_str(record.get("systemPrompt")) and self.builder.step_count() == 0:
            self.builder.system(record["systemPrompt"], when, extra={"kind": "system_prompt"})

    def on_llm_request(self, record, when):
        self.request_kind = as_str(record.get("kind")) or "loop"
        self.builder.model_name = as_str(record.get("model")) or self.builder.model_name

    def on_context_append_message(self, record, when):
        message = as_dict(record.get("message"))
        origin = as_dict(message.get("origin"))
        content = chat_content(message.get("content"))
        if message.get("role") != "user":
            self.builder.warn(f"context message with role {message.get('role')!r} skipped")
        elif typed_by_user(message):
            self.builder.user(content, when)
        else:
            labels = (origin.get("kind"), origin.get("variant") or origin.get("name"))
            self.builder.system(content, when, extra={"kind": ":".join(str(v) for v in labels if v)})

    def on_context_apply_compaction(self, record, when):
        self.builder.system(as_str(record.get("summary")) or "", when,
                            extra={"kind": "compaction", "compacted_count": record.get("compactedCount"),
                                   "tokens_before": record.get("tokensBefore"),
                                   "tokens_after": record.get("tokensAfter")})

    def on_usage_record(self, record, when):
        """The usage of every model call. A loop step's usage was already taken from its
        step.end; any other call (compaction, title) becomes an agent step of its own."""
        usage = record.get("usage")
        if self.pending_usage is not None and usage == self.pending_usage:
            self.pending_usage = None
            return
        found = code_metrics(usage)
        if found is None:
            return
        self.builder.agent("", when, model_name=as_str(record.get("model")) or self.builder.model_name,
                           metrics=found, llm_call_count=1,
                           extra={"kind": f"model_call:{self.request_kind}"})

    def on_context_append_loop_event(self, record, when):
        event = as_dict(record.get("event"))
        handler = getattr(self, "loop_" + (as_str(event.get("type")) or "").replace(".", "_"), None)
        if handler is not None:
            handler(event, when)

    def loop_step_begin(self, event, when):
        self.current.begin()
        self.pending_usage = None

    def loop_content_part(self, event, when):
        part = as_dict(event.get("part"))
        kind = part.get("type")
        if kind in ("text", "think"):
            text = as_str(part.get(kind)) or as_str(part.get("text")) or ""
            self.current.add_part(kind, text, when, self.builder.model_name)

    def loop_tool_call(self, event, when):
        step = self.current.ensure(when, self.builder.model_name)
        self.builder.tool_call(step, as_str(event.get("toolCallId")), as_str(event.get("name")) or "",
                               event.get("args"))

    def loop_tool_result(self, event, when):
        call_id = as_str(event.get("toolCallId")) or ""
        result = as_dict(event.get("result"))
        content = chat_content(result.get("output"))
        extra = {"is_error": True} if result.get("isError") or result.get("is_error") else None
        refs = self.subagent_refs(content)
        join_result(self.builder, call_id, content, when, extra, subagents=refs)

    def loop_step_end(self, event, when):
        usage = code_metrics(event.get("usage"))
        if usage is not None:
            self.current.ensure(when, self.builder.model_name).metrics = usage
            self.pending_usage = event.get("usage")
        self.current.set_extra(finish_reason=as_str(event.get("finishReason")),
                               message_id=as_str(event.get("messageId")))

    def subagent_refs(self, content) -> list | None:
        """A finished `Agent` call names its sub-agent (`agent_id: agent-0`): embed that
        sub-agent's own wire log (once; two levels at most)."""
        match = CODE_AGENT_LINK.search(content) if isinstance(content, str) else None
        if not match or self.depth >= 2 or match.group(1) in self.embedded:
            return None
        agent_id = match.group(1)
        path = os.path.join(self.agents_dir, agent_id, "wire.jsonl")
        if not storefs.isfile(path) or os.sep in agent_id:
            return None
        self.embedded.add(agent_id)
        sub = TrajectoryBuilder(ATIF_NAME, session_id=agent_id, model_name=self.builder.model_name)
        reader = JsonlReader(path)
        _CodeWire(sub, self.agents_dir, self.depth + 1).run(reader)
        for problem in reader.problems():
            sub.warn(f"{agent_id}/wire.jsonl: {problem}")
        return self.builder.embed(sub.build(), f"{self.builder.session_id}/{agent_id}")


def code_metrics(usage):
    return kimi_metrics(usage, "inputOther", "output", "inputCacheRead", "inputCacheCreation")
