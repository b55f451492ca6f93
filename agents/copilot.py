"""GitHub Copilot CLI: `${COPILOT_HOME:-~/.copilot}`.

Three layouts, newest first:
- `session-state/<id>/events.jsonl` (1.0.x), with `workspace.yaml` beside it (cwd, name);
- `session-state/<id>.jsonl`, the older flat file (when both exist for an id, the directory wins);
- `history-session-state/*.json`, one JSON document per session (`chatMessages` in the OpenAI
  chat shape, before the event log existed).

The event log is a chain of `{type, data, id, timestamp, parentId}` records. Tool calls are the
`toolRequests` of an `assistant.message`, joined to `tool.execution_complete` by `toolCallId`.
Events of a sub-agent carry `data.parentToolCallId` (the `task` call that spawned it); they
become an embedded trajectory referenced from that call's result. `session-store.db` is only an
index (its `cwd` is mostly NULL since 1.0.13) and is never read.

Model. Chosen at `session.start`/`session.resume` (`selectedModel`) or changed
(`session.model_change`); some logs name it only in `session.shutdown` (`currentModel`, then
the model of every step naming none) or per tool execution (`tool.execution_complete`
`model`, the model of the step that made the call: a session may hold several); the legacy
documents in `selectedModel`.

Tokens. `session.usage_record` (1.0.9x) gives each model call's usage, joined to its
`assistant.message` by `apiCallId`: those are the step metrics. `inputTokens` already counts
the cache reads and writes, and `outputTokens` the reasoning tokens (the OpenAI convention the
CLI reports in). Older logs give only `outputTokens` per message; the session's input totals
exist only in `session.shutdown.modelMetrics`, so then `final_metrics` carries the shutdown
totals (see `NativeTotals`) and says so in `final_metrics.extra.token_source`.
"""

from __future__ import annotations

import os

from agents.base import (JsonlReader, Session, as_dict, as_int, as_list, as_str, env_dir, epoch,
                         head_records, iso, loads_native, one_line, open_binary, read_whole, text_of)
from atif.build import metrics, TrajectoryBuilder
from atif.serialize import loads
from core import storefs

NAME = "copilot"
PREFIX = "cp"
ATIF_NAME = "copilot-cli"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("copilot", "--resume", "{id}"), "resume_prompt": ("copilot", "--resume", "{id}", "-p", "{prompt}"),
       "start": ("copilot", "-i", "{prompt}"), "start_prompt": ("copilot", "-p", "{prompt}"), "checked": "1.0.102"}
VERSION = 2

EVENTS = "events.jsonl"
WORKSPACE = "workspace.yaml"


# discovery --------------------------------------------------------------------------------------
def copilot_home(env) -> str:
    return env_dir(env, "COPILOT_HOME", ".copilot")


def sources(env):
    root = copilot_home(env)
    yield from _event_logs(os.path.join(root, "session-state"))
    legacy = os.path.join(root, "history-session-state")
    for entry in _entries(legacy):
        if entry.is_file() and entry.name.endswith(".json"):
            yield entry.path


def _entries(directory: str) -> list:
    try:
        with storefs.scandir(directory) as found:
            return sorted((e for e in found if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError:
        return []


def _event_logs(state: str):
    """`<id>/events.jsonl` for every session directory, then the flat `<id>.jsonl` files whose
    id has no directory."""
    entries = _entries(state)
    directories = set()
    for entry in entries:
        log = os.path.join(entry.path, EVENTS)
        if entry.is_dir() and storefs.isfile(log):
            directories.add(entry.name)
            yield log
    for entry in entries:
        if entry.is_file() and entry.name.endswith(".jsonl") and entry.name[:-6] not in directories:
            yield entry.path


def source_format(source: str) -> str:
    if source.endswith(".json"):
        return "legacy-json"
    return "events-dir" if os.path.basename(source) == EVENTS else "events-flat"


def dependencies(source: str, env) -> list[str]:
    if source_format(source) == "events-dir":
        return [source, os.path.join(os.path.dirname(source), WORKSPACE)]
    return [source]


def default_id(source: str) -> str:
    """The session id the layout implies: the directory name, or the file name's stem."""
    if source_format(source) == "events-dir":
        return os.path.basename(os.path.dirname(source))
    return os.path.splitext(os.path.basename(source))[0]


def read_workspace(source: str) -> dict:
    """The top-level `key: value` pairs of `workspace.yaml` beside an event log. Only flat
    scalar keys are needed (cwd, name, created_at), so no YAML library: nested or multi-line
    values are skipped."""
    if source_format(source) != "events-dir":
        return {}
    try:
        with open_binary(os.path.join(os.path.dirname(source), WORKSPACE)) as handle:
            text = handle.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        if not line or line[0] in " \t#-" or ":" not in line:
            continue
        key, _, value = line.partition(":")
        scalar = _yaml_scalar(value.strip())
        if scalar:
            found[key.strip()] = scalar
    return found


def _yaml_scalar(value: str) -> str | None:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return loads(value)
        except ValueError:
            return value[1:-1]
    if value in ("", "|", ">", "null", "~") or value[0] in "[{&*!|>":
        return None
    return value


# scan -------------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    if source_format(source) == "legacy-json":
        return [_scan_legacy(source)]
    session = Session(agent=NAME, native_id=default_id(source), source=source,
                      extra={"format": source_format(source)})
    for record in head_records(source):
        _scan_record(session, record)
        if session.cwd and session.title and session.model and session.started:
            break
    workspace = read_workspace(source)
    session.cwd = session.cwd or workspace.get("cwd")
    session.started = session.started or epoch(workspace.get("created_at"))
    session.title = session.title or one_line(workspace.get("name") or "")
    return [session]


def _scan_record(session: Session, record: dict) -> None:
    kind, data = record.get("type"), event_data(record)
    session.started = session.started or epoch(data.get("startTime")) or epoch(record.get("timestamp"))
    if kind == "session.start" and as_str(data.get("sessionId")):
        session.native_id = data["sessionId"]
    session.cwd = session.cwd or context_cwd(data)
    session.model = session.model or recorded_model(kind, data)
    if kind == "user.message" and not session.title and not is_synthetic_prompt(data):
        session.title = one_line(user_text(data))


def recorded_model(kind, data: dict) -> str | None:
    """The model an event names: chosen (`selectedModel` of a start or resume, `newModel` of a
    change), in use at the end (`currentModel` of `session.shutdown`), or the one that made a
    tool call (`model` of `tool.execution_complete`); a log may record it only in the last two."""
    found = as_str(data.get("selectedModel")) or as_str(data.get("newModel"))
    if kind == "session.shutdown":
        found = found or as_str(data.get("currentModel"))
    elif kind == "tool.execution_complete":
        found = found or as_str(data.get("model"))
    return found


def _scan_legacy(source: str) -> Session:
    document = read_legacy(source)
    session = Session(agent=NAME, native_id=as_str(document.get("sessionId")) or default_id(source),
                      source=source, started=epoch(document.get("startTime")),
                      cwd=legacy_cwd(document), model=as_str(document.get("selectedModel")),
                      extra={"format": "legacy-json"})
    for message in legacy_messages(document):
        session.started = session.started or epoch(message.get("time") or message.get("timestamp"))
        if legacy_role(message) == "user" and not session.title:
            session.title = one_line(text_of(message.get("content")))
    return session


# shared readers ---------------------------------------------------------------------------------
def event_data(record: dict) -> dict:
    """An event's payload. A few flat logs (no `data`) keep the fields on the record itself."""
    data = record.get("data")
    return data if isinstance(data, dict) else record


def context_cwd(data: dict) -> str | None:
    return as_str(as_dict(data.get("context")).get("cwd")) or as_str(data.get("cwd"))


def user_text(data: dict) -> str:
    return text_of(data.get("content")) or text_of(data.get("prompt"))


def is_synthetic_prompt(data: dict) -> bool:
    """Skill instructions the CLI injects as a `user.message`: not typed by the human."""
    source = as_str(data.get("source")) or ""
    return source.startswith("skill-") or user_text(data).lstrip().startswith("<skill-context")


def read_legacy(source: str) -> dict:
    document = loads_native(read_whole(source))
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    return document


def legacy_messages(document: dict) -> list[dict]:
    """`chatMessages` (the CLI's own dumps) or `history` (older exports)."""
    messages = as_list(document.get("chatMessages")) or as_list(document.get("history"))
    return [m for m in messages if isinstance(m, dict)]


def legacy_role(message: dict) -> str:
    role = as_str(message.get("role")) or ""
    return "user" if role == "human" else role


def legacy_cwd(document: dict) -> str | None:
    return as_str(document.get("cwd")) or as_str(document.get("workspacePath"))


# translation ------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    if session.extra.get("format") == "legacy-json":
        return translate_legacy(session)
    reader = JsonlReader(session.source)
    translator = EventTranslator(session, list(reader))
    for problem in reader.problems():
        translator.main.builder.warn(problem)
    return translator.document()


class Usage:
    """Token counts, summed over `calls` model calls."""

    def __init__(self, prompt: int = 0, completion: int = 0, cached: int = 0, cache_write: int = 0,
                 reasoning: int = 0, calls: int = 0):
        self.prompt, self.completion, self.cached = prompt, completion, cached
        self.cache_write, self.reasoning, self.calls = cache_write, reasoning, calls

    @classmethod
    def of(cls, usage: dict) -> "Usage":
        """From a Copilot usage object (`usage_record.usage`, `modelMetrics.<m>.usage`)."""
        value = lambda key: as_int(usage.get(key)) or 0  # noqa: E731
        return cls(value("inputTokens"), value("outputTokens"), value("cacheReadTokens"),
                   value("cacheWriteTokens"), value("reasoningTokens"), 1)

    def add(self, other: "Usage") -> None:
        self.prompt += other.prompt
        self.completion += other.completion
        self.cached += other.cached
        self.cache_write += other.cache_write
        self.reasoning += other.reasoning
        self.calls += other.calls

    def step_metrics(self) -> dict | None:
        extra = {k: v for k, v in (("cache_write_tokens", self.cache_write),
                                   ("reasoning_tokens", self.reasoning)) if v}
        return metrics(self.prompt, self.completion, self.cached, extra=extra)


class NativeTotals:
    """The session totals of `session.shutdown`. Since the shutdowns carry an
    `accountingSnapshot` (1.0.9x) each one is cumulative over the whole session, resumes
    included, and replaces what came before; earlier CLIs reset the counters on every resume,
    so their shutdowns add up."""

    def __init__(self):
        self.usage: Usage | None = None
        self.output_after = 0    # outputTokens of messages after the last shutdown

    def shutdown(self, data: dict) -> None:
        found = shutdown_usage(data)
        if found is None:
            return
        if self.usage is None or "accountingSnapshot" in data:
            self.usage = found
        else:
            self.usage.add(found)
        self.output_after = 0


def shutdown_usage(data: dict) -> Usage | None:
    """A shutdown's totals over every model (`modelMetrics.<model>.usage`), or, in the earliest
    logs, its `tokenDetails` by kind."""
    models = [as_dict(m) for m in as_dict(data.get("modelMetrics")).values()]
    usages = [as_dict(m.get("usage")) for m in models if as_dict(m.get("usage"))]
    if usages:
        total = Usage()
        for usage in usages:
            total.add(Usage.of(usage))
        total.calls = sum(as_int(as_dict(m.get("requests")).get("count")) or 0 for m in models)
        return total
    details = as_dict(data.get("tokenDetails"))
    if details:
        count = lambda key: as_int(as_dict(details.get(key)).get("tokenCount")) or 0  # noqa: E731
        return Usage(count("input"), count("output"), count("cache_read"), count("cache_write"))
    return None


class Agent:
    """The main agent or one sub-agent: its builder and what is pending on it."""

    def __init__(self, builder: TrajectoryBuilder, parent: str | None = None, trajectory_id: str = ""):
        self.builder = builder
        self.parent = parent            # toolCallId of the spawning call (None: main agent)
        self.reasoning: list = []
        self.trajectory_id = trajectory_id


class EventTranslator:
    """One pass over the events, routing each to the agent (main or sub-agent) it belongs to."""

    def __init__(self, session: Session, events: list[dict]):
        self.events = events
        self.session_id = session.native_id
        self.main = Agent(TrajectoryBuilder(ATIF_NAME, session_id=self.session_id))
        self.agents: dict[str, Agent] = {}
        self.agent_ids: dict[str, str] = {}        # event agentId -> spawning toolCallId
        self.model = next((as_str(event_data(r).get("currentModel")) for r in events   # until one is chosen
                           if r.get("type") == "session.shutdown" and as_str(event_data(r).get("currentModel"))), None)
        self.unnamed: dict = {}                    # toolCallId -> the step of a message naming no model
        self.usage = usage_records(events)
        self.claimed: set[str] = set()             # apiCallIds joined to a message
        self.totals = NativeTotals()
        self.starts: dict[str, dict] = {}          # toolCallId -> tool.execution_start data
        self.referenced: set[str] = set()
        self.spawner: dict[str, str] = {}          # sub-agent toolCallId -> its parent's
        self.skipped: list[str] = []               # event types not translated

    # routing ---------------------------------------------------------------------------------
    def agent_of(self, record: dict, data: dict) -> Agent:
        parent = as_str(data.get("parentToolCallId"))
        if not parent:
            parent = self.agent_ids.get(as_str(record.get("agentId")) or "")
        if parent and parent not in self.agents:
            self.spawn(parent, {})
        return self.agents[parent] if parent else self.main

    def spawn(self, call_id: str, data: dict) -> Agent:
        builder = TrajectoryBuilder(ATIF_NAME, session_id=self.session_id,
                                    model_name=as_str(data.get("model")))
        for key in ("agentName", "agentDisplayName", "agentDescription"):
            if as_str(data.get(key)):
                builder.agent_extra[key] = data[key]
        agent = Agent(builder, call_id, trajectory_id=f"{self.session_id}:subagent:{call_id}")
        self.agents[call_id] = agent
        return agent

    # the pass --------------------------------------------------------------------------------
    def document(self) -> dict:
        for record in self.events:
            data = event_data(record)
            kind = as_str(record.get("type"))
            if kind in IGNORED:
                continue
            handler = HANDLERS.get(kind)
            if handler is None:
                if str(kind) not in self.skipped:
                    self.skipped.append(str(kind))
                continue
            handler(self, record, data, self.agent_of(record, data))
        return self.finish()

    def finish(self) -> dict:
        self.reference_unclaimed()
        for call_id in reversed(list(self.agents)):  # children before the agents that spawned them
            agent = self.agents[call_id]
            owner = self.owner_of(call_id)
            owner.builder.embed(agent.builder.build(), agent.trajectory_id)
        builder = self.main.builder
        builder.model_name = builder.model_name or self.model
        if self.skipped:
            builder.extra["skipped_record_types"] = self.skipped
        doc = builder.build()
        self.native_final_metrics(doc)
        return doc

    def reference_unclaimed(self) -> None:
        """A sub-agent whose spawning call has no recorded result (interrupted, or running in
        the background) is referenced from a system step of its owner instead, so that no
        embedded trajectory is left unreferenced."""
        for call_id, agent in self.agents.items():
            if call_id in self.referenced:
                continue
            owner = self.owner_of(call_id).builder
            name = agent.builder.agent_extra.get("agentName", "sub-agent")
            step = owner.system(f"{name} (call {call_id}) has no recorded result",
                                extra={"kind": "subagent"})
            owner.observe(step, None, subagents=[self.ref(call_id)])

    def ref(self, call_id: str) -> dict:
        return {"trajectory_id": self.agents[call_id].trajectory_id, "session_id": self.session_id}

    def owner_of(self, call_id: str) -> Agent:
        """The agent whose call spawned sub-agent `call_id`."""
        return self.agents.get(self.spawner.get(call_id, ""), self.main)

    # final metrics -----------------------------------------------------------------------------
    def native_final_metrics(self, doc: dict) -> None:
        """Make `final_metrics` the session's native totals. With per-call usage records the
        steps already hold them, plus the calls no message claims (auxiliary calls: added here
        and counted in `extra.unattributed_calls`). Without them the steps hold only output
        tokens, and the shutdown totals (plus output after the last shutdown) are the honest
        session total."""
        final = doc["final_metrics"]
        if self.usage:
            unclaimed = Usage()
            for call, usage in self.usage.items():
                if call not in self.claimed:
                    unclaimed.add(usage)
            if unclaimed.calls:
                add_usage(final, unclaimed, {"token_source": "session.usage_record",
                                             "unattributed_calls": unclaimed.calls})
            return
        if self.totals.usage is not None:
            totals = Usage(**vars(self.totals.usage))
            totals.completion += self.totals.output_after
            for key in ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens"):
                final.pop(key, None)
            add_usage(final, totals, {"token_source": "session.shutdown",
                                      "model_calls": totals.calls or None})


FINAL_ORDER = ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens",
               "total_cost_usd", "total_steps", "extra")


def add_usage(final: dict, usage: Usage, extra: dict) -> None:
    """Add `usage` to a `final_metrics` object, keeping the spec's key order."""
    for key, value in (("total_prompt_tokens", usage.prompt),
                       ("total_completion_tokens", usage.completion),
                       ("total_cached_tokens", usage.cached)):
        final[key] = final.get(key, 0) + value
    final["extra"] = {k: v for k, v in extra.items() if v is not None}
    ordered = {k: final[k] for k in FINAL_ORDER if k in final}
    final.clear()
    final.update(ordered)


def usage_records(events: list[dict]) -> dict[str, Usage]:
    found = {}
    for record in events:
        if record.get("type") == "session.usage_record":
            usage = as_dict(event_data(record).get("usage"))
            call = (as_str(usage.get("apiCallId"))
                    or as_str(as_dict(usage.get("accounting")).get("usageId")))
            if call and call not in found:
                found[call] = Usage.of(usage)
    return found


# handlers ---------------------------------------------------------------------------------------
def on_session_start(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    builder = t.main.builder
    builder.version = as_str(data.get("copilotVersion")) or builder.version
    t.model = as_str(data.get("selectedModel")) or t.model
    context = as_dict(data.get("context"))
    for key, name in (("gitRoot", "git_root"), ("repository", "repository"), ("branch", "branch")):
        if as_str(context.get(key)) and name not in builder.extra:
            builder.extra[name] = context[key]


def on_resume(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    t.model = as_str(data.get("selectedModel")) or t.model
    t.main.builder.extra["resumes"] = t.main.builder.extra.get("resumes", 0) + 1


def on_model_change(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    t.model = as_str(data.get("newModel")) or t.model


def on_shutdown(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    t.totals.shutdown(data)


def on_system_message(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    agent.builder.system(text_of(data.get("content")), iso(record.get("timestamp")),
                         extra={"kind": "system_prompt"})


def on_notification(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    kind = as_dict(data.get("kind"))
    extra = {"kind": "notification"}
    if as_str(kind.get("type")):
        extra["notification_type"] = kind["type"]
    agent.builder.system(text_of(data.get("content")), iso(record.get("timestamp")), extra=extra)


def on_error(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    message = as_str(data.get("message")) or "error"
    extra = {"kind": "error"}
    if as_str(data.get("errorType")):
        extra["error_type"] = data["errorType"]
    agent.builder.system(message, iso(record.get("timestamp")), extra=extra)


def on_abort(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    reason = as_str(data.get("reason"))
    agent.builder.system(f"aborted: {reason}" if reason else "aborted", iso(record.get("timestamp")),
                         extra={"kind": "abort"})


def on_truncation(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    removed = as_int(data.get("tokensRemovedDuringTruncation")) or as_int(data.get("droppedTokens"))
    message = "context truncated" + (f": {removed} tokens removed" if removed else "")
    details = {k: v for k, v in data.items() if isinstance(v, (int, float, str))}
    agent.builder.system(message, iso(record.get("timestamp")),
                         extra={"kind": "truncation", "details": details,
                                "context_management": {"type": "pruning", "boundary": "truncate"}})


def on_compaction(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    summary = as_str(data.get("summaryContent")) or "context compacted"
    agent.builder.system(summary, iso(record.get("timestamp")),
                         extra={"kind": "compaction",
                                "context_management": {"type": "compaction", "boundary": "replace"}})


def on_user_message(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    text, stamp = user_text(data), iso(record.get("timestamp"))
    if is_synthetic_prompt(data):
        agent.builder.system(text, stamp, extra={"kind": "skill", "source": data.get("source")})
        return
    extra = {}
    transformed = as_str(data.get("transformedContent"))
    if transformed and transformed != text:
        extra["transformed_content"] = transformed
    attachments = [a for a in as_list(data.get("attachments")) if isinstance(a, dict)]
    if attachments:
        extra["attachments"] = attachments
    agent.builder.user(text, stamp, extra=extra or None)


def on_reasoning(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    text = text_of(data.get("content"))
    if text:
        agent.reasoning.append(text)


def on_assistant_message(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    reasoning = as_str(data.get("reasoningText")) or "\n\n".join(agent.reasoning) or None
    agent.reasoning.clear()
    model = as_str(data.get("model")) or t.model
    agent.builder.model_name = agent.builder.model_name or model
    step = agent.builder.agent(text_of(data.get("content")), iso(record.get("timestamp")),
                               model_name=model, reasoning=reasoning,
                               metrics=message_metrics(t, data), llm_call_count=1)
    for request in as_list(data.get("toolRequests")):
        if isinstance(request, dict):
            call_id = agent.builder.tool_call(step, as_str(request.get("toolCallId")),
                                              as_str(request.get("name")) or "unknown",
                                              parse_arguments(request.get("arguments")))
            if not as_str(data.get("model")):
                t.unnamed[call_id] = step


def message_metrics(t: EventTranslator, data: dict) -> dict | None:
    """The usage record of this model call, else the message's own `outputTokens`."""
    call = as_str(data.get("apiCallId"))
    usage = t.usage.get(call) if call else None
    if usage is not None and call not in t.claimed:
        t.claimed.add(call)
        return usage.step_metrics()
    output = as_int(data.get("outputTokens"))
    if output:
        t.totals.output_after += output
        return metrics(completion=output)
    return None


def parse_arguments(value):
    """Arguments arrive as an object or as a JSON string."""
    if isinstance(value, str):
        try:
            return loads_native(value)
        except ValueError:
            return value
    return value


def on_tool_start(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    call_id = as_str(data.get("toolCallId"))
    if call_id:
        t.starts[call_id] = data


def on_tool_complete(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    call_id = as_str(data.get("toolCallId")) or ""
    step = t.unnamed.pop(call_id, None)
    if step is not None and as_str(data.get("model")):  # the model that requested the call
        step.model_name = data["model"]
        agent.builder.model_name = agent.builder.model_name or data["model"]
    content, extra = tool_output(data)
    refs = [t.ref(call_id)] if call_id in t.agents else None
    if call_id and agent.builder.tool_result(call_id, content, extra, subagents=refs):
        if refs:
            t.referenced.add(call_id)
        return
    start = t.starts.get(call_id, {})
    name = as_str(start.get("toolName")) or "tool"
    step = agent.builder.system(f"{name} ran without a recorded model request",
                                iso(record.get("timestamp")), extra={"kind": "orphan_tool_result"})
    agent.builder.observe(step, content, {**extra, "tool_call_id": call_id or None,
                                          "arguments": start.get("arguments")}, subagents=refs)
    agent.builder.warn("tool results without a matching tool request were kept on system steps")
    if refs:
        t.referenced.add(call_id)


def tool_output(data: dict) -> tuple[str, dict]:
    """A tool's output text and the result's `extra` (is_error, exit_code)."""
    result = data.get("result")
    if isinstance(result, dict):
        content = text_of(result.get("content")) or text_of(result.get("detailedContent"))
    else:
        content = text_of(result)
    error = data.get("error")
    if error is not None:
        message = as_str(as_dict(error).get("message")) or text_of(error)
        content = f"{content}\n{message}" if content else message
    extra = {}
    if data.get("success") is False:
        extra["is_error"] = True
    exit_code = as_int(as_dict(data.get("shellExecution")).get("exitCode"))
    if exit_code is not None:
        extra["exit_code"] = exit_code
    return content, extra


def on_subagent_started(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    call_id = as_str(data.get("toolCallId"))
    if not call_id:
        return
    spawned = t.agents.get(call_id) or t.spawn(call_id, data)
    if agent.parent and agent is not spawned:
        t.spawner[call_id] = agent.parent
    if as_str(record.get("agentId")):
        t.agent_ids[record["agentId"]] = call_id


def on_subagent_completed(t: EventTranslator, record: dict, data: dict, agent: Agent) -> None:
    spawned = t.agents.get(as_str(data.get("toolCallId")) or "")
    if spawned is not None:
        summary = {k: data[k] for k in ("model", "totalToolCalls", "totalTokens", "durationMs")
                   if k in data}
        spawned.builder.extra["completion"] = {"status": record.get("type"), **summary}


HANDLERS = {
    "session.start": on_session_start,
    "session.resume": on_resume,
    "session.model_change": on_model_change,
    "session.shutdown": on_shutdown,
    "session.error": on_error,
    "session.truncation": on_truncation,
    "session.compaction_complete": on_compaction,
    "system.message": on_system_message,
    "system.notification": on_notification,
    "abort": on_abort,
    "user.message": on_user_message,
    "assistant.reasoning": on_reasoning,
    "assistant.message": on_assistant_message,
    "tool.execution_start": on_tool_start,
    "tool.execution_complete": on_tool_complete,
    "subagent.started": on_subagent_started,
    "subagent.completed": on_subagent_completed,
    "subagent.failed": on_subagent_completed,
}
# Events that carry nothing for a trajectory: lifecycle, telemetry, UI state (usage records are
# read before the pass).
IGNORED = frozenset(("session.usage_record", "session.usage_checkpoint", "session.info",
                     "session.permissions_changed", "session.auto_mode_resolved",
                     "assistant.turn_start", "assistant.turn_end", "hook.start", "hook.end",
                     "session.compaction_start"))


# legacy documents -------------------------------------------------------------------------------
def translate_legacy(session: Session) -> dict:
    document = read_legacy(session.source)
    model = as_str(document.get("selectedModel"))
    builder = TrajectoryBuilder(ATIF_NAME, model_name=model, session_id=session.native_id)
    for message in legacy_messages(document):
        legacy_step(builder, message, model)
    return builder.build()


def legacy_step(builder: TrajectoryBuilder, message: dict, model: str | None = None) -> None:
    role, stamp = legacy_role(message), iso(message.get("time") or message.get("timestamp"))
    text = text_of(message.get("content")) or text_of(message.get("result"))
    if role == "user":
        builder.user(text, stamp)
    elif role == "assistant":
        step = builder.agent(text, stamp, model_name=model, llm_call_count=1)
        for call in as_list(message.get("tool_calls")):
            function = as_dict(as_dict(call).get("function"))
            builder.tool_call(step, as_str(as_dict(call).get("id")),
                              as_str(function.get("name")) or "unknown",
                              parse_arguments(function.get("arguments")))
    elif role == "tool":
        call_id = as_str(message.get("tool_call_id")) or ""
        if not builder.tool_result(call_id, text):
            step = builder.system(f"{message.get('name') or 'tool'} output", stamp,
                                  extra={"kind": "orphan_tool_result"})
            builder.observe(step, text)
    elif text:
        builder.system(text, stamp, extra={"kind": role or "unknown"})
