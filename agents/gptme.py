"""gptme (gptme/gptme): one folder per conversation, its messages one JSONL line each.

Store: `${GPTME_LOGS_HOME:-${XDG_DATA_HOME:-~/.local/share}/gptme/logs}/<conversation>/`, the
folder named after the conversation (`2026-12-01-sprinting-green-dog`, or `--name`), holding
`conversation.jsonl` and `config.toml` (`[chat]`: `workspace`, `model`, `tool_format`, the
conversation's `name`); `events.jsonl` repeats the messages as events and is not read.

A message is `{role, content, timestamp, pinned?, hide?, call_id?, metadata?}` with roles
`system`, `user` and `assistant`. The system prompt (`pinned`; it begins `You are gptme
v<version>`, the document's agent version) and the context gptme adds are `system` messages; a tool's result is a `system` message with the `call_id` of its call and
`metadata.tool`, a shell result ending in `Return code: N` when the command failed. With the
`tool` format (`--tool-format tool`), an assistant message holds its calls as lines
`@<tool>(<call id>): <JSON arguments>` after its text; with the `markdown` and `xml` formats a
call is a code block of the text, which is kept as text. An assistant message's
`metadata.usage` is `{input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,
reasoning_tokens}`, `input_tokens` excluding the cache (older logs keep the counts flat in
`metadata`). In autonomous mode gptme answers a reply without a call with a `user` message
`<system>...</system>` of its own: a system step. gptme appends the text files a prompt names
to it, each as a block `\n\n````<path>\n<content>\n````` at its end: those blocks are a system
step after the prompt.
"""

from __future__ import annotations

import glob
import json
import os
import re

from core import compiledre, storefs
from agents.base import (JsonlReader, Session, as_dict, as_int, as_str, env_dir, epoch, head_records, iso,
                         join_result, mtime, one_line, read_whole, text_of)
from atif.build import metrics, TrajectoryBuilder

NAME = "gptme"
PREFIX = "gp"
ATIF_NAME = "gptme"
VERSION = 1

CONVERSATION = "conversation.jsonl"
CONFIG = "config.toml"
CONFIG_LIMIT = 64 * 1024      # bytes of config.toml read; a larger one is not read
CALL = compiledre.compile(r"^@([^\r\n(]+?)\(([\w\-:.]+)\):[ \t]*(?={)", re.M)
RETURN_CODE = compiledre.compile(r"^Return code: (-?\d+)\s*$", re.M)
INJECTED = compiledre.compile(r"^<system>.*</system>$", re.S)
VERSION_LINE = compiledre.compile(r"You are gptme v(\d[\w.+-]*)")   # how its system prompt begins
FENCE = "````"
MAX_INCLUDED = 100            # file blocks looked for at the end of one prompt


def logs_dir(env) -> str:
    return env.get("GPTME_LOGS_HOME") or os.path.join(env_dir(env, "XDG_DATA_HOME", ".local", "share"), "gptme",
                                                      "logs")


def sources(env):
    return sorted(storefs.glob(os.path.join(glob.escape(logs_dir(env)), "*", CONVERSATION)))


def dependencies(source: str, env) -> list[str]:
    return [source, os.path.join(os.path.dirname(source), CONFIG)]


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    chat = chat_config(source)[0]
    started, title, model = None, "", as_str(chat.get("model"))
    for record in head_records(source):   # the system prompt is stamped after the prompt it precedes
        stamp = epoch(record.get("timestamp"))
        started = min(started, stamp) if started and stamp else started or stamp
        if record.get("role") == "user" and not title and not injected(record):
            title = one_line(text_of(record.get("content")))
        if record.get("role") == "assistant" and model is None:
            model = as_str(as_dict(record.get("metadata")).get("model"))
        if title and model:
            break
    return [Session(agent=NAME, native_id=os.path.basename(os.path.dirname(source)), source=source,
                    started=started or mtime(source), cwd=as_str(chat.get("workspace")), title=title,
                    model=model, extra={"format": f"jsonl-{as_str(chat.get('tool_format')) or 'unknown'}"})]


def chat_config(source: str) -> tuple[dict, str]:
    """The `[chat]` table of the conversation's config.toml, and what kept it from being read."""
    path = os.path.join(os.path.dirname(source), CONFIG)
    try:
        import tomllib  # here: only a store with a config file needs it

        config = tomllib.loads(read_whole(path, CONFIG_LIMIT).decode("utf-8", "replace"))
    except FileNotFoundError:
        return {}, ""
    except (OSError, ValueError) as exc:   # TooLarge and TOMLDecodeError are ValueErrors
        return {}, f"{CONFIG} not read: {exc}"
    return as_dict(config.get("chat")), ""


def injected(record: dict) -> bool:
    content = record.get("content")
    return isinstance(content, str) and bool(INJECTED.match(content.strip()))


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    reader = JsonlReader(session.source)
    records = list(reader)
    chat, problem = chat_config(session.source)
    builder = TrajectoryBuilder(ATIF_NAME, model_name=session.model, session_id=session.native_id)
    for warning in reader.problems() + ([problem] if problem else []):
        builder.warn(warning)
    for record in records:
        message(builder, record)
    builder.extra.update({k: v for k, v in {
        "title": as_str(chat.get("name")), "tool_format": as_str(chat.get("tool_format")),
        "format": session.extra.get("format")}.items() if v})
    return builder.build()


def message(builder: TrajectoryBuilder, record: dict) -> None:
    role, when = record.get("role"), iso(record.get("timestamp"))
    content = record.get("content")
    text = content if isinstance(content, str) else text_of(content)
    if role == "user" and injected(record):
        builder.system(text, when, extra={"kind": "auto_reply"})
    elif role == "user":
        typed = len(text) - len(included(text))
        builder.user(text[:typed], when)
        if typed < len(text):
            builder.system(text[typed:].strip("\n"), when, extra={"kind": "included_files"})
    elif role == "assistant":
        reply(builder, record, text, when)
    elif role == "system" and as_str(record.get("call_id")):
        result(builder, record, text)
    elif role == "system":
        builder.system(text, when, extra={"kind": "system_prompt" if record.get("pinned") else "context"})
        version = VERSION_LINE.match(text) if record.get("pinned") else None
        if version and builder.version == "unknown":
            builder.version = version.group(1)
    else:
        builder.warn(f"message with unknown role {role!r} skipped")


def included(text: str) -> str:
    """The file blocks gptme appended to a prompt (`\n\n````path\n...\n````` each), found
    from the end, in one pass."""
    end = len(text)
    for _ in range(MAX_INCLUDED):
        if not text.endswith("\n" + FENCE, 0, end):
            break
        start = text.rfind("\n\n" + FENCE, 0, end - len(FENCE) - 1)
        header = text[start + 2 + len(FENCE): text.find("\n", start + 2, end)] if start >= 0 else "`"
        if "`" in header:
            break
        end = start
    return text[end:]


def reply(builder: TrajectoryBuilder, record: dict, text: str, when) -> None:
    meta = as_dict(record.get("metadata"))
    calls = list(CALL.finditer(text))
    step = builder.agent(text[: calls[0].start()].rstrip() if calls else text, when,
                         model_name=as_str(meta.get("model")), metrics=usage_metrics(meta), llm_call_count=1)
    decoder = json.JSONDecoder()
    for call in calls:
        try:
            arguments, _ = decoder.raw_decode(text, call.end())
        except ValueError:
            builder.warn(f"the arguments of call {call.group(2)} are not JSON; kept as text")
            arguments = {"input": text[call.end():].split("\n@", 1)[0]}
        builder.tool_call(step, call.group(2), call.group(1).strip(), arguments)


def result(builder: TrajectoryBuilder, record: dict, text: str) -> None:
    code = RETURN_CODE.findall(text)
    exit_code = int(code[-1]) if code else None
    extra = {"exit_code": exit_code, "is_error": True} if exit_code else None
    join_result(builder, as_str(record.get("call_id")), text, iso(record.get("timestamp")), extra=extra,
                tool_name=as_str(as_dict(record.get("metadata")).get("tool")))


def usage_metrics(meta: dict) -> dict | None:
    """An assistant message's usage: nested under `usage`, or flat in older logs."""
    usage = as_dict(meta.get("usage")) or meta
    read, written = as_int(usage.get("cache_read_tokens")) or 0, as_int(usage.get("cache_creation_tokens")) or 0
    prompt = as_int(usage.get("input_tokens"))
    if prompt is None:
        return None
    reasoning = as_int(usage.get("reasoning_tokens"))
    extra = {k: v for k, v in {"cache_creation_tokens": written, "reasoning_tokens": reasoning}.items() if v}
    return metrics(prompt + read + written, as_int(usage.get("output_tokens")), read,
                   cost=meta.get("cost") if isinstance(meta.get("cost"), (int, float)) else None, extra=extra)
