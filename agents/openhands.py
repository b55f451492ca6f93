"""OpenHands CLI (V1, on the OpenHands software-agent-sdk): one folder per conversation.

Store: `${OPENHANDS_CONVERSATIONS_DIR:-${OPENHANDS_PERSISTENCE_DIR:-~/.openhands}/conversations}/
<conversation hex>/`, holding `base_state.json` (the conversation's state: `id`, `workspace.
working_dir`, `agent.llm.model`, `execution_status`, and `stats.usage_to_metrics.<usage id>`
with one `token_usages` entry per model call, keyed by `response_id`) and `events/event-NNNNN-
<event uuid>.json`, one JSON object per event, its `kind` naming it:

- `SystemPromptEvent`: the system prompt (`system_prompt.text`, `dynamic_context.text`);
- `MessageEvent`: `llm_message {role, content[], reasoning_content, thinking_blocks}` from the
  user (what the human typed; `extended_content` is what the agent context appended to it) or
  the agent (a model reply without tool calls, with its `llm_response_id`);
- `ActionEvent`: one tool call of a model reply (`tool_call {id, name, arguments}` as the
  model gave it, `thought[]` the reply's text, `reasoning_content`); the calls of one reply
  share its `llm_response_id`, and its text and reasoning are on the first;
- `ObservationEvent` (`observation {content[], is_error, exit_code, kind}`), `AgentErrorEvent`
  (`error`) and `UserRejectObservation` (`rejection_reason`): a call's result, by `tool_call_id`;
- `Condensation` (`summary` of the events forgotten, made by the condenser's model call
  `llm_response_id`) and `CondensationSummaryEvent`; the rest (`ConversationStateUpdateEvent`,
  `PauseEvent`, `TokenEvent`, ...) carry no conversation text.

The files are numbered in order; their number, not their name, orders them (the SDK pads it to
five digits, a longer conversation outgrows that). Timestamps are naive local times. A token
usage's `prompt_tokens` includes the cache reads (litellm's convention); an ACP-backed agent
reports the reads beside it, which shows as more reads than prompt tokens, and then they are
added. A continued conversation (`--resume`) appends to the same folder.

OpenHands V0 (the GUI server's `${OPENHANDS_PERSISTENCE_DIR:-~/.openhands}/sessions/<id>/`,
`metadata.json` and `events/<n>.json`) is found and read alike, its events by openhands_v0.py.
"""

from __future__ import annotations

import os

from core import compiledre, storefs
from agents import openhands_v0
from agents.base import (FILE_LIMIT, RECORD_LIMIT, SESSION_LIMIT, Session, TooLarge, as_dict, as_int,
                         as_list, as_str, env_dir, epoch, iso, join_result, json_arguments, listdir,
                         mtime, one_line, parse_native, read_json_document, read_whole, size_text,
                         text_of, url_image)
from atif.build import metrics, plain_or_parts, text_part, TrajectoryBuilder
from atif.serialize import dumps_text

NAME = "openhands"
PREFIX = "oh"
ATIF_NAME = "openhands"
VERSION = 2

EVENT_FILE = compiledre.compile(r"^(?:event-(\d+)-[^/]*|(\d+))\.json$")  # V1's, V0's
TITLE_EVENTS = 16       # events discovery reads, at most, to find the first prompt
SILENT_KINDS = {"ConversationStateUpdateEvent", "PauseEvent", "InterruptEvent", "TokenEvent",
                "LLMCompletionLogEvent", "CondensationRequest", "HookExecutionEvent",
                "StreamingDeltaEvent", "ACPToolCallEvent"}
RESULT_KINDS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")


def conversations_dir(env) -> str:
    explicit = env.get("OPENHANDS_CONVERSATIONS_DIR")
    if explicit:
        return explicit
    return os.path.join(env_dir(env, "OPENHANDS_PERSISTENCE_DIR", ".openhands"), "conversations")


def sources(env):
    """The conversation folders that hold a state file or events: V1's, then V0's."""
    v0 = os.path.join(env_dir(env, "OPENHANDS_PERSISTENCE_DIR", ".openhands"), "sessions")
    for root, state in ((conversations_dir(env), "base_state.json"), (v0, openhands_v0.METADATA)):
        for name in listdir(root):
            folder = os.path.join(root, name)
            if storefs.isfile(os.path.join(folder, state)) or event_files(folder):
                yield folder


def is_v0(folder: str) -> bool:
    return os.path.basename(os.path.dirname(folder)) == "sessions"


def event_files(folder: str) -> list[str]:
    """The conversation's event files in their order (by number; at most RECORD_LIMIT)."""
    numbered = []
    events = os.path.join(folder, "events")
    for name in listdir(events):
        match = EVENT_FILE.match(name)
        if match:
            numbered.append((int(match.group(1) or match.group(2)), name))
    return [os.path.join(events, name) for _, name in sorted(numbered)[:RECORD_LIMIT]]


def dependencies(source: str, env) -> list[str]:
    state = openhands_v0.METADATA if is_v0(source) else "base_state.json"
    return [os.path.join(source, state), *event_files(source)]


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    if is_v0(source):
        return [_scan_v0(source)]
    state, _ = read_state(source)
    title, started = "", None
    for path in event_files(source)[:TITLE_EVENTS]:
        event, _ = read_event(path)
        started = started or epoch(event.get("timestamp"))
        if is_prompt(event):
            title = one_line(message_text(as_dict(event.get("llm_message")).get("content")))
            break
    return [Session(agent=NAME, native_id=os.path.basename(source), source=source,
                    started=started or mtime(source),
                    cwd=as_str(as_dict(state.get("workspace")).get("working_dir")) or None,
                    title=title, model=state_model(state), extra={"format": "v1"})]


def _scan_v0(source: str) -> Session:
    metadata, _ = read_state(source, openhands_v0.METADATA)
    events = [read_event(path)[0] for path in event_files(source)[:TITLE_EVENTS]]
    title = next(filter(None, map(openhands_v0.prompt_of, events)), None)
    return Session(agent=NAME, native_id=os.path.basename(source), source=source,
                   started=openhands_v0.started(metadata, events[0] if events else {}) or mtime(source),
                   title=title or one_line(as_str(metadata.get("title")) or ""),
                   model=openhands_v0.model_of(metadata), extra={"format": openhands_v0.FORMAT})


def read_state(folder: str, name: str = "base_state.json") -> tuple[dict, list[str]]:
    path = os.path.join(folder, name)
    if not storefs.exists(path):
        return {}, [f"{name} is missing"]
    state, problems = read_json_document(path)
    return state, [f"{name}: {p}" for p in problems]


def read_event(path: str) -> tuple[dict, str]:
    """One event and the problem met reading it ("" when none)."""
    try:
        event, _ = parse_native(read_whole(path))
    except TooLarge as exc:
        return {}, str(exc)
    except (OSError, ValueError) as exc:
        return {}, f"{os.path.basename(path)}: not readable JSON ({str(exc)[:80]})"
    if not isinstance(event, dict):
        return {}, f"{os.path.basename(path)}: not a JSON object"
    return event, ""


def state_model(state: dict) -> str | None:
    return as_str(as_dict(as_dict(state.get("agent")).get("llm")).get("model"))


def is_prompt(event: dict) -> bool:
    return event.get("kind") == "MessageEvent" and event.get("source") == "user"


def message_text(content) -> str:
    return text_of([part for part in as_list(content) if as_dict(part).get("type") == "text"])


def content_parts(content):
    """The SDK's content parts (`text`, `image` with `image_urls`) as an ATIF message."""
    if isinstance(content, str):
        return content
    parts = []
    for part in as_list(content):
        part = as_dict(part)
        if part.get("type") == "text":
            parts.append(text_part(as_str(part.get("text")) or ""))
        elif part.get("type") == "image":
            parts += [url_image(url) for url in as_list(part.get("image_urls"))]
    return plain_or_parts(parts)


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    if session.extra.get("format") == openhands_v0.FORMAT:
        return _translate_v0(session)
    state, problems = read_state(session.source)
    builder = TrajectoryBuilder(ATIF_NAME, model_name=state_model(state) or session.model,
                                session_id=session.native_id)
    for problem in problems:
        builder.warn(problem)
    usages = token_usages(state)
    _Events(builder, usages).run(read_events(session.source, builder))
    builder.extra.update({k: v for k, v in {
        "conversation_id": as_str(state.get("id")), "cwd": session.cwd,
        "execution_status": as_str(state.get("execution_status")), "format": session.extra.get("format"),
        "usage_outside_steps": usages.unused() or None}.items() if v})
    return builder.build()


def _translate_v0(session: Session) -> dict:
    metadata, problems = read_state(session.source, openhands_v0.METADATA)
    builder = TrajectoryBuilder(ATIF_NAME, model_name=openhands_v0.model_of(metadata) or session.model,
                                session_id=session.native_id)
    for problem in problems:
        builder.warn(problem)
    openhands_v0.Events(builder).run(read_events(session.source, builder))
    builder.extra.update({k: v for k, v in {
        "title": as_str(metadata.get("title")), "repository": as_str(metadata.get("selected_repository")),
        "format": openhands_v0.FORMAT}.items() if v})
    return builder.build()


def read_events(folder: str, builder: TrajectoryBuilder):
    """The events, in order, within SESSION_LIMIT bytes in all; what cannot be read is warned of."""
    budget = SESSION_LIMIT
    for path in event_files(folder):
        try:
            size = storefs.stat(path).st_size
        except OSError:
            continue
        if size > budget:
            builder.warn(f"the limit of {size_text(SESSION_LIMIT)} read of one conversation's events "
                         f"was reached at {os.path.basename(path)}; the rest was not read")
            return
        budget -= min(size, FILE_LIMIT)
        event, problem = read_event(path)
        if problem:
            builder.warn(problem)
        elif event:
            yield event


class TokenUsages:
    """The per-call usage records of every usage id (agent, condenser, ...), by response id."""

    def __init__(self, records: list[dict]):
        self.by_response: dict = {}
        for record in records:
            key = as_str(record.get("response_id"))
            if key:
                self.by_response.setdefault(key, record)
        self.used: set = set()

    def take(self, response_id) -> tuple[dict | None, str | None]:
        """(step metrics, model) of a call, each counted once."""
        record = self.by_response.get(response_id) if isinstance(response_id, str) else None
        if record is None or response_id in self.used:
            return None, None
        self.used.add(response_id)
        return usage_metrics(record), as_str(record.get("model")) or None

    def unused(self) -> dict:
        """Totals of the calls no event names (kept in `extra`, not in the steps' metrics)."""
        left = [r for key, r in self.by_response.items() if key not in self.used]
        found = [usage_metrics(r) or {} for r in left]
        return {k: sum(m.get(k) or 0 for m in found) for k in ("prompt_tokens", "completion_tokens")
                if any(m.get(k) for m in found)}


def token_usages(state: dict) -> TokenUsages:
    records = []
    for usage in as_dict(as_dict(state.get("stats")).get("usage_to_metrics")).values():
        records += [r for r in as_list(as_dict(usage).get("token_usages")) if isinstance(r, dict)]
    return TokenUsages(records)


def usage_metrics(record: dict) -> dict | None:
    prompt, read = as_int(record.get("prompt_tokens")), as_int(record.get("cache_read_tokens")) or 0
    if prompt is None:
        return None
    if read > prompt:  # reported beside the prompt (ACP), not inside it
        prompt += read
    extra = {k: v for k, v in {"cache_write_tokens": as_int(record.get("cache_write_tokens")) or None,
                               "reasoning_tokens": as_int(record.get("reasoning_tokens")) or None}.items() if v}
    return metrics(prompt, as_int(record.get("completion_tokens")), read, extra=extra)


class _Events:
    """Turns the events into steps: one agent step per model call (`llm_response_id`)."""

    def __init__(self, builder: TrajectoryBuilder, usages: TokenUsages):
        self.builder = builder
        self.usages = usages
        self.reply = None           # (response id, agent step) of the model reply being read

    def run(self, events) -> None:
        for event in events:
            kind = as_str(event.get("kind"))
            when = iso(event.get("timestamp"))
            if kind != "ActionEvent":
                self.reply = None
            handler = getattr(self, f"on_{kind}", None)
            if handler is not None:
                handler(event, when)
            elif kind in RESULT_KINDS:
                self.result(event, kind, when)
            elif kind not in SILENT_KINDS:
                self.builder.warn(f"unknown event kind {kind!r} skipped")

    def on_SystemPromptEvent(self, event: dict, when) -> None:
        texts = [as_str(as_dict(event.get(key)).get("text")) for key in ("system_prompt", "dynamic_context")]
        self.builder.system("\n\n".join(t for t in texts if t), when, extra={"kind": "system_prompt"})

    def on_MessageEvent(self, event: dict, when) -> None:
        message = as_dict(event.get("llm_message"))
        source = event.get("source")
        if source == "user":
            self.builder.user(content_parts(message.get("content")), when)
            extended = message_text(event.get("extended_content"))
            if extended:
                self.builder.system(extended, when, extra={"kind": "extended_content"})
        elif source == "agent":
            self.model_step(event, message.get("content"), reasoning_of(message), when)
        else:
            self.builder.system(content_parts(message.get("content")), when,
                                extra={"kind": f"message:{source}"})

    def on_ActionEvent(self, event: dict, when) -> None:
        response = event.get("llm_response_id")
        if self.reply is None or self.reply[0] != response or not isinstance(response, str):
            step = self.model_step(event, event.get("thought"), reasoning_of(event), when)
            self.reply = (response, step)
        call = as_dict(event.get("tool_call"))
        arguments = json_arguments(call.get("arguments")) if "arguments" in call else \
            {k: v for k, v in as_dict(event.get("action")).items() if k != "kind"}
        self.builder.tool_call(self.reply[1], as_str(call.get("id")) or as_str(event.get("tool_call_id")),
                               as_str(call.get("name")) or as_str(event.get("tool_name")) or "", arguments)

    def on_Condensation(self, event: dict, when) -> None:
        """The condenser's summary of the events it took out of the model's view: a model call
        of its own when it names one."""
        usage, model = self.usages.take(event.get("llm_response_id"))
        extra = {"kind": "condensation", "forgotten_events": len(as_list(event.get("forgotten_event_ids")))}
        summary = as_str(event.get("summary")) or ""
        if usage is None and model is None:
            self.builder.system(summary, when, extra=extra)
        else:
            self.builder.agent(summary, when, model_name=model, metrics=usage, llm_call_count=1, extra=extra)

    def on_CondensationSummaryEvent(self, event: dict, when) -> None:
        self.builder.system(as_str(event.get("summary")) or "", when, extra={"kind": "condensation_summary"})

    def on_ConversationErrorEvent(self, event: dict, when) -> None:
        detail = as_str(event.get("detail")) or dumps_text(event.get("detail"))
        self.builder.system(detail, when, extra={"kind": "error", "code": event.get("code")})

    def model_step(self, event: dict, content, reasoning: str, when):
        usage, model = self.usages.take(event.get("llm_response_id"))
        return self.builder.agent(message_text(content), when, model_name=model, reasoning=reasoning or None,
                                  metrics=usage, llm_call_count=1)

    def result(self, event: dict, kind: str, when) -> None:
        call_id = as_str(event.get("tool_call_id"))
        if kind == "ObservationEvent":
            observation = as_dict(event.get("observation"))
            content = content_parts(observation.get("content")) if "content" in observation \
                else dumps_text(observation)
            extra = {k: v for k, v in {"is_error": observation.get("is_error") is True or None,
                                       "exit_code": as_int(observation.get("exit_code"))}.items()
                     if v is not None}
        elif kind == "AgentErrorEvent":
            content, extra = as_str(event.get("error")) or "", {"is_error": True}
        else:
            content = f"rejected: {as_str(event.get('rejection_reason')) or ''}"
            extra = {"is_error": True, "rejected_by": as_str(event.get("rejection_source")) or "user"}
        join_result(self.builder, call_id, content, when, extra, tool_name=as_str(event.get("tool_name")))


def reasoning_of(record: dict) -> str:
    """The reasoning of a model reply: `reasoning_content`, else its thinking blocks' text, else
    the summary of an OpenAI Responses reasoning item."""
    text = as_str(record.get("reasoning_content"))
    if text:
        return text
    thoughts = [as_str(as_dict(b).get("thinking")) for b in as_list(record.get("thinking_blocks"))]
    if any(thoughts):
        return "\n\n".join(t for t in thoughts if t)
    item = as_dict(record.get("responses_reasoning_item"))
    return text_of(as_list(item.get("summary")) or as_list(item.get("content")), "\n\n")
