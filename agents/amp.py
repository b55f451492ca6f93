"""Amp (Sourcegraph): one JSON document per thread, `~/.local/share/amp/threads/<id>.json`.

`${XDG_DATA_HOME:-~/.local/share}` is honoured as for any XDG data directory. A thread is
`{v, id, created (ms), title, messages, env: {initial: {trees: [{displayName, uri}]}}, meta}`.
Messages carry Anthropic-style blocks (`text`, `thinking`, `tool_use`, and `tool_result`, either
`{tool_use_id, content}` or Amp's own `{toolUseID, run: {status, result, error}}`), and every
assistant message its inference's `usage: {model, inputTokens, outputTokens,
cacheCreationInputTokens, cacheReadInputTokens, totalInputTokens, timestamp}`, where
`totalInputTokens` is the sum of the three input buckets. The working directory is the `file://`
URI of the thread's first workspace tree. Some exports hold plain `{role, text, createdAt}`
messages; they are read too.

The file is rewritten whole as the thread grows; one cut short keeps its complete messages.
"""

from __future__ import annotations

import glob
import os

from agents.base import (Session, as_dict, as_int, as_list, as_str, env_dir, epoch, iso,
                         join_result, one_line, read_json_document, text_of)
from atif.build import image_part, metrics, plain_or_parts, text_part, TrajectoryBuilder
from atif.serialize import dumps_text
from core import storefs

NAME = "amp"
PREFIX = "am"
ATIF_NAME = "amp"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("amp", "threads", "continue", "{id}"), "start_prompt": ("amp", "-x", "{prompt}"),
       "checked": "0.0.1790142911"}
VERSION = 1


def threads_dir(env) -> str:
    return os.path.join(env_dir(env, "XDG_DATA_HOME", ".local", "share"), "amp", "threads")


def sources(env):
    return sorted(storefs.glob(os.path.join(glob.escape(threads_dir(env)), "*.json")))


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    """The whole thread is read: a single JSON document has no head to read, and the catalog
    scans a file again only when it changes."""
    thread, _ = read_json_document(source)
    messages = [m for m in as_list(thread.get("messages")) if isinstance(m, dict)]
    first_user = next((m for m in messages if m.get("role") == "user" and prompt_text(m)), {})
    model = next((as_str(as_dict(m.get("usage")).get("model")) for m in messages
                  if as_dict(m.get("usage")).get("model")), None)
    started = epoch(thread.get("created")) or _first_time(messages) or storefs.stat(source).st_mtime
    title = prompt_text(first_user) or as_str(thread.get("title")) or ""
    return [Session(agent=NAME, native_id=thread_id(source, thread), source=source, started=started,
                    cwd=work_dir(thread), title=one_line(title), model=model,
                    extra={"format": thread_format(thread)})]


def thread_format(thread: dict) -> str:
    version = as_int(thread.get("v"))
    return f"v{version}" if version is not None else "unversioned"


def thread_id(source: str, thread: dict) -> str:
    """The file name is the thread id (Amp looks threads up by it); the JSON id otherwise."""
    stem = os.path.basename(source)[: -len(".json")]
    return stem or as_str(thread.get("id")) or source


def work_dir(thread: dict) -> str | None:
    trees = as_list(as_dict(as_dict(thread.get("env")).get("initial")).get("trees"))
    uri = as_str(as_dict(trees[0]).get("uri")) if trees else None
    if not uri:
        return None
    from urllib.parse import unquote, urlparse  # here: only a thread with a file URI needs it

    parsed = urlparse(uri)
    if parsed.scheme != "file" or not parsed.path:
        return None
    return unquote(parsed.path)


def prompt_text(message: dict) -> str:
    if isinstance(message.get("text"), str):
        return message["text"]
    return "\n".join(as_str(b.get("text")) or "" for b in as_list(message.get("content"))
                     if isinstance(b, dict) and b.get("type") == "text")


def _first_time(messages: list) -> float | None:
    return next((found for found in (message_time(m) for m in messages) if found), None)


def message_time(message: dict) -> float | None:
    return (epoch(as_dict(message.get("usage")).get("timestamp"))
            or epoch(as_dict(message.get("meta")).get("sentAt")) or epoch(message.get("createdAt")))


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    thread, problems = read_json_document(session.source)
    builder = TrajectoryBuilder(ATIF_NAME, session_id=thread_id(session.source, thread),
                                model_name=session.model)
    for problem in problems:
        builder.warn(problem)
    for index, message in enumerate(as_list(thread.get("messages"))):
        if not isinstance(message, dict):
            builder.warn(f"message {index} is not an object; skipped")
            continue
        when = iso(message_time(message))
        if message.get("role") == "assistant":
            _assistant(builder, message, when)
        elif message.get("role") == "user":
            _user(builder, message, when)
        else:
            builder.warn(f"message with unknown role {message.get('role')!r} skipped")
    builder.extra.update({k: v for k, v in {"title": as_str(thread.get("title")),
                                            "format": session.extra.get("format")}.items() if v})
    return builder.build()


def _assistant(builder: TrajectoryBuilder, message: dict, when) -> None:
    texts, thoughts, calls = [], [], []
    if isinstance(message.get("text"), str):
        texts.append(message["text"])
    for block in as_list(message.get("content")):
        block = as_dict(block)
        kind = block.get("type")
        if kind == "text":
            texts.append(as_str(block.get("text")) or "")
        elif kind == "thinking":
            thoughts.append(as_str(block.get("thinking")) or "")
        elif kind == "tool_use":
            calls.append(block)
    usage = as_dict(message.get("usage"))
    state = as_str(as_dict(message.get("state")).get("type"))
    step = builder.agent("\n\n".join(t for t in texts if t), when,
                         model_name=as_str(usage.get("model")) or builder.model_name,
                         reasoning="\n\n".join(t for t in thoughts if t) or None,
                         metrics=usage_metrics(usage), llm_call_count=1,
                         extra={"state": state} if state and state != "complete" else None)
    for call in calls:
        builder.tool_call(step, as_str(call.get("id")), as_str(call.get("name")) or "",
                          call.get("input"))


def _user(builder: TrajectoryBuilder, message: dict, when) -> None:
    parts = [text_part(message["text"])] if isinstance(message.get("text"), str) else []
    for block in as_list(message.get("content")):
        block = as_dict(block)
        if block.get("type") == "text":
            parts.append(text_part(as_str(block.get("text")) or ""))
        elif block.get("type") == "image":
            source = as_dict(block.get("source"))
            media_type = as_str(source.get("mediaType") or source.get("media_type"))
            parts.append(image_part(media_type, source.get("data")))
        elif block.get("type") == "tool_result":
            _tool_result(builder, block, when)
    if not any(p["type"] == "image" or p["text"].strip() for p in parts):
        return
    builder.user(plain_or_parts(parts, "\n\n"), when)


def _tool_result(builder: TrajectoryBuilder, block: dict, when) -> None:
    """Anthropic's `{tool_use_id, content, is_error}` or Amp's `{toolUseID, run}`."""
    call_id = as_str(block.get("tool_use_id")) or as_str(block.get("toolUseID")) or ""
    run = as_dict(block.get("run"))
    if "run" in block:
        status = as_str(run.get("status"))
        content = result_text(run.get("result")) if run.get("result") is not None else \
            as_str(as_dict(run.get("error")).get("message")) or f"[{status or 'no result'}]"
        failed = status in ("error", "cancelled", "rejected-by-user") or \
            as_dict(run.get("result")).get("success") is False
        extra = {k: v for k, v in {"status": status if status != "done" else None,
                                   "is_error": True if failed else None}.items() if v is not None}
    else:
        content = text_of(block.get("content"))
        extra = {"is_error": True} if block.get("is_error") else {}
    join_result(builder, call_id, content, when, extra)


def result_text(result) -> str:
    """A run result as text: strings as they are, a Bash/Read/Edit result by its output,
    content or diff, anything else as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        for key in ("output", "content", "diff"):
            if isinstance(result.get(key), str) and result[key]:
                return result[key]
    if isinstance(result, list) and all(isinstance(item, str) for item in result):
        return "\n".join(result)
    return dumps_text(result)


def usage_metrics(usage: dict) -> dict | None:
    fresh = as_int(usage.get("inputTokens"))
    if fresh is None and as_int(usage.get("totalInputTokens")) is None:
        return None
    write = as_int(usage.get("cacheCreationInputTokens")) or 0
    read = as_int(usage.get("cacheReadInputTokens")) or 0
    prompt = as_int(usage.get("totalInputTokens"))
    if prompt is None:
        prompt = (fresh or 0) + write + read
    # OpenAI-family threads file uncached input under cacheCreationInputTokens: not a cache write
    billed_write = write and not (as_str(usage.get("model")) or "").startswith("gpt-")
    return metrics(prompt=prompt, completion=as_int(usage.get("outputTokens")), cached=read,
                   extra={"cache_write_tokens": write} if billed_write else None)
