"""Factory Droid: `~/.factory/sessions/<encoded cwd>/<session id>.jsonl` + `<id>.settings.json`.

The transcript is Claude-Code-like JSONL: a `session_start` record (`id`, `title`,
`sessionTitle`, `cwd`, `version`), then `message` records `{id, parentId, timestamp, message:
{role, content}}` whose content blocks are Anthropic's (`text`, `thinking`, `tool_use`,
`tool_result`). The harness puts `<system-reminder>` blocks before what the human typed: a
first user message of reminders alone, then the prompt (0.215.0), or reminders opening the
prompt's own text; they are system steps, and the first message listed is the typed prompt
(`claude.split_reminders`). The settings file holds the model and the session's token
totals (`tokenUsage: {inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens,
thinkingTokens}`), the only usage Droid records, so they become `final_metrics`.

The messages go through the Claude Code translator (`agents.claude`), which already joins tool
results, classifies injected text and marks abandoned branches.

`droid exec --output-format stream-json` logs (`system`, `message`, `tool_call`, `tool_result`,
`completion` records) are read too when found in the store.
"""

from __future__ import annotations

import glob
import os

from agents import claude, session_totals
from agents.base import (JsonlReader, Session, as_dict, as_int, as_str, epoch,
                         head_records, home, iso, join_result, one_line, read_json_object, text_of)
from atif.build import TrajectoryBuilder
from atif.serialize import dumps_text
from core import storefs

NAME = "droid"
PREFIX = "fd"
ATIF_NAME = "factory-droid"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("droid", "--resume", "{id}"), "start": ("droid", "{prompt}"),
       "start_prompt": ("droid", "exec", "{prompt}"), "checked": "0.215.0"}
VERSION = 2

STREAM_TYPES = {"system", "tool_call", "tool_result", "completion"}


def sessions_dir(env) -> str:
    return os.path.join(home(env), ".factory", "sessions")


def sources(env):
    root = glob.escape(sessions_dir(env))
    found = storefs.glob(os.path.join(root, "*", "*.jsonl")) + storefs.glob(os.path.join(root, "*.jsonl"))
    return sorted(found)


def settings_path(source: str) -> str:
    return source[: -len(".jsonl")] + ".settings.json"


def dependencies(source: str, env) -> list[str]:
    return [source, settings_path(source)]


def read_settings(source: str) -> dict:
    return read_json_object(settings_path(source))


def dialect(records: list[dict]) -> str:
    """"store" (the interactive session store) or "stream-json" (a `droid exec` log)."""
    for record in records[:50]:
        if record.get("type") == "session_start" or isinstance(record.get("message"), dict):
            return "store"
        if as_str(record.get("type")) in STREAM_TYPES:
            return "stream-json"
    return "store"


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    records = list(head_records(source))
    settings = read_settings(source)
    kind = dialect(records)
    start = next((r for r in records if r.get("type") in ("session_start", "system")), {})
    schema = as_int(start.get("version")) if kind == "store" else None
    native_id = as_str(start.get("id") if kind == "store" else start.get("session_id")) or \
        os.path.basename(source)[: -len(".jsonl")]
    first_time = next((epoch(r.get("timestamp")) for r in records if r.get("timestamp")), None)
    title = first_prompt(records, kind) or as_str(start.get("sessionTitle")) or ""
    return [Session(agent=NAME, native_id=native_id, source=source,
                    started=first_time or storefs.stat(source).st_mtime, cwd=as_str(start.get("cwd")) or None,
                    title=one_line(title),
                    model=as_str(settings.get("model")) or as_str(start.get("model")),
                    extra={"format": f"{kind}-v{schema}" if schema is not None else kind})]


def first_prompt(records: list[dict], kind: str) -> str:
    for record in records:
        if kind == "stream-json":
            if record.get("type") == "message" and record.get("role") == "user":
                return as_str(record.get("text")) or ""
            continue
        message = as_dict(record.get("message"))
        if message.get("role") == "user":
            prompt = claude.prompt_text(text_of(message.get("content"), "\n\n"), {})
            if prompt:
                return prompt
    return ""


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    reader = JsonlReader(session.source)
    records = list(reader)
    settings = read_settings(session.source)
    builder = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id,
                                model_name=as_str(settings.get("model")) or session.model)
    if dialect(records) == "stream-json":
        _translate_stream(builder, records)
    else:
        _translate_store(builder, records, session)
    for problem in reader.problems():
        builder.warn(problem)
    builder.extra["format"] = session.extra.get("format") or dialect(records)
    modes = [m for m in (as_str(settings.get("interactionMode")), as_str(settings.get("autonomyMode"))) if m]
    if modes:  # the session's interaction mode (`spec`: planning first, `auto`) and its autonomy
        builder.extra["modes"] = [*builder.extra.get("modes", []), *(m[:40] for m in modes)]
    doc = builder.build()
    _apply_totals(doc, as_dict(settings.get("tokenUsage")))
    return doc


def _translate_store(builder: TrajectoryBuilder, records: list[dict], session: Session) -> None:
    claude.translate_records(builder, _as_claude_records(builder, records),
                             session.source[: -len(".jsonl")])


def _as_claude_records(builder: TrajectoryBuilder, records: list[dict]):
    """The message records in Claude Code's shape, in file order. The `session_start` record and
    records of other types are noted in `builder` as they go by, so that the notes keep the file
    order, mixed with those the Claude translator makes."""
    for record in records:
        if record.get("type") == "session_start":
            _note_session_start(builder, record)
        elif record.get("type") == "message":
            yield claude_record(record)
        else:
            claude.note_skipped_type(builder, record.get("type"))


def _note_session_start(builder: TrajectoryBuilder, record: dict) -> None:
    version = record.get("version")  # the CLI's release, or (a number) the file's schema
    if isinstance(version, str):
        builder.version = version
    elif as_int(version) is not None:
        builder.extra["schema_version"] = as_int(version)
    title = as_str(record.get("sessionTitle")) or as_str(record.get("title"))
    if title:
        builder.extra["native_title"] = title


def claude_record(record: dict) -> dict:
    """A Droid message record in Claude Code's shape (`type` = role, `uuid`/`parentUuid`)."""
    message = as_dict(record.get("message"))
    return {"type": message.get("role"), "uuid": record.get("id"), "parentUuid": record.get("parentId"),
            "timestamp": record.get("timestamp"), "message": message}


def _translate_stream(builder: TrajectoryBuilder, records: list[dict]) -> None:
    """A `droid exec` stream-json log: flat messages, calls and results."""
    for record in records:
        kind, when = record.get("type"), iso(record.get("timestamp"))
        text = as_str(record.get("text")) or ""
        if kind == "system":
            builder.model_name = builder.model_name or as_str(record.get("model"))
        elif kind == "message" and record.get("role") == "user":
            builder.user(text, when)
        elif kind == "message" and record.get("role") == "assistant":
            builder.agent(text, when, model_name=builder.model_name, llm_call_count=1)
        elif kind == "tool_call":
            step = builder.last_step
            if step is None or step.source != "agent" or step.results:
                step = builder.agent("", when, model_name=builder.model_name, llm_call_count=1)
            builder.tool_call(step, as_str(record.get("toolCallId")),
                              as_str(record.get("toolName")) or "", record.get("parameters"))
        elif kind == "tool_result":
            _stream_result(builder, record, when)
        elif kind == "completion":
            _stream_completion(builder, record, when)
        else:
            builder.warn(f"unknown stream-json record type {kind!r} skipped")


def _stream_result(builder: TrajectoryBuilder, record: dict, when) -> None:
    value = record.get("value")
    content = value if isinstance(value, str) else dumps_text(value)
    if isinstance(value, dict) and isinstance(value.get("stdout"), str):
        content = value["stdout"]
    code = as_int(as_dict(value).get("exitCode"))
    failed = record.get("isError") or code not in (None, 0)
    extra = {k: v for k, v in {"exit_code": code, "is_error": True if failed else None}.items()
             if v is not None}
    call_id = as_str(record.get("toolCallId")) or ""
    join_result(builder, call_id, content, when, extra)


def _stream_completion(builder: TrajectoryBuilder, record: dict, when) -> None:
    """The run's final text, unless the last assistant message already said it."""
    final = as_str(record.get("finalText")) or ""
    last = builder.last_step
    if final and not (last is not None and last.source == "agent" and last.message == final):
        builder.agent(final, when, model_name=builder.model_name, llm_call_count=1)


def _apply_totals(doc: dict, usage: dict) -> None:
    fresh = as_int(usage.get("inputTokens"))
    write = as_int(usage.get("cacheCreationTokens")) or 0
    read = as_int(usage.get("cacheReadTokens")) or 0
    session_totals.apply(doc, None if fresh is None else fresh + write + read,
                         as_int(usage.get("outputTokens")), read if fresh is not None else None,
                         includes_subagents=False,
                         usage_source="settings.json tokenUsage (Droid records usage per session)")
    extra = doc["final_metrics"].get("extra")
    if extra is not None:
        for key, name in (("cacheCreationTokens", "cache_write_tokens"),
                          ("thinkingTokens", "thinking_tokens")):
            if as_int(usage.get(key)):
                extra[name] = as_int(usage.get(key))
