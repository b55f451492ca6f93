"""Continue (continuedev/continue): the `cn` CLI's sessions, which the IDE extensions write too.

Store: `${CONTINUE_GLOBAL_DIR:-~/.continue}/sessions/<session id>.json`, one JSON document per
session, rewritten whole as it grows: `{sessionId, title, workspaceDirectory, history[], usage,
mode?, chatModelTitle?}`. `history` holds `{message, contextItems[], toolCallStates[],
reasoning?, conversationSummary?}` items, `message` being `{role, content, toolCalls?, usage?}`
with roles `user`, `assistant`, `thinking` (the reasoning of the reply after it), `system` and
`tool`; `content` is a string or `text`/`imageUrl` parts. An assistant message's tool calls are
OpenAI's (`{id, function: {name, arguments}}`); their results are in the item's
`toolCallStates` (`{toolCallId, status: done|errored|canceled|..., parsedArgs, output:
[{content, name}]}`). A reply's model is its `usage.model` or, more often the only record of
it, `promptLogs[].completionOptions.model`. Each reply's `usage` is OpenAI's (`prompt_tokens` with the cached
tokens among them, `prompt_tokens_details.cached_tokens`), except through Continue's Anthropic
adapter, which reports the cache reads and writes beside `prompt_tokens`
(`prompt_tokens_details.cache_read_tokens`, `cache_write_tokens`): then they are added. The
session's own `usage` totals are not used (the CLI leaves its cached count at 0).

`/compact` replaces the history with the system message and an assistant message holding the
summary (`conversationSummary`): what came before it is no longer in the store.

Nothing in a session is timestamped. Its creation time is in `sessions/sessions.json`, the list
of sessions (`[{sessionId, title, dateCreated (ms, a string), workspaceDirectory}]`); that list
is not one of a session's dependencies on purpose: it changes with every turn of any session,
which would make every session be scanned again.
"""

from __future__ import annotations

import glob
import os

from agents.base import (Session, as_dict, as_int, as_list, as_str, env_dir, epoch, join_result,
                         json_arguments, loads_native, mtime, one_line, read_json_document, read_whole,
                         text_of, url_image)
from atif.build import metrics, plain_or_parts, text_part, TrajectoryBuilder
from core import storefs

NAME = "continue"
PREFIX = "co"
ATIF_NAME = "continue-cli"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"start": ("cn", "{prompt}"), "start_prompt": ("cn", "-p", "{prompt}"), "checked": "1.5.47"}
VERSION = 2

INDEX = "sessions.json"
_listing: dict = {}   # sessions.json path -> ((mtime_ns, size), {session id: entry})


def sessions_dir(env) -> str:
    return os.path.join(env_dir(env, "CONTINUE_GLOBAL_DIR", ".continue"), "sessions")


def sources(env):
    found = storefs.glob(os.path.join(glob.escape(sessions_dir(env)), "*.json"))
    return sorted(path for path in found if os.path.basename(path) != INDEX)


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    """The whole session is read: a JSON document has no head to read, and the catalog scans a
    file again only when it changes."""
    session, _ = read_json_document(source)
    native_id = session_id(source, session)
    entry = listed(os.path.join(os.path.dirname(source), INDEX)).get(native_id, {})
    history = [as_dict(item) for item in as_list(session.get("history"))]
    prompt = next((m for m in map(message_of, history) if m.get("role") == "user"), {})
    return [Session(agent=NAME, native_id=native_id, source=source,
                    started=epoch(entry.get("dateCreated")) or mtime(source),
                    cwd=as_str(session.get("workspaceDirectory")) or as_str(entry.get("workspaceDirectory")),
                    title=one_line(content_text(prompt.get("content"))), model=session_model(session, history),
                    extra={"format": "json"})]


def session_id(source: str, session: dict) -> str:
    return as_str(session.get("sessionId")) or os.path.basename(source)[: -len(".json")]


def listed(path: str) -> dict:
    """sessions.json by session id, read once per change of the file."""
    try:
        stat = storefs.stat(path)
    except OSError:
        return {}
    key = (stat.st_mtime_ns, stat.st_size)
    found = _listing.get(path)
    if found is None or found[0] != key:
        try:
            entries = loads_native(read_whole(path))
        except (OSError, ValueError):
            entries = []
        by_id = {as_str(e.get("sessionId")): e for e in as_list(entries) if isinstance(e, dict)}
        found = (key, by_id)
        _listing[path] = found
    return found[1]


def message_of(item: dict) -> dict:
    return as_dict(item.get("message"))


def session_model(session: dict, history: list[dict]) -> str | None:
    return next(filter(None, map(item_model, history)), None) or as_str(session.get("chatModelTitle"))


def item_model(item: dict) -> str | None:
    """The model of a reply: its usage's, else the one its prompt logs name
    (`promptLogs[].completionOptions.model`: most sessions record it there alone)."""
    found = as_str(as_dict(message_of(item).get("usage")).get("model"))
    for log in as_list(item.get("promptLogs")):
        found = found or as_str(as_dict(as_dict(log).get("completionOptions")).get("model"))
    return found


def content_text(content) -> str:
    if isinstance(content, str):
        return content
    return text_of([p for p in as_list(content) if as_dict(p).get("type") == "text"])


def content_parts(content):
    """Continue's message content (a string, or `text` and `imageUrl` parts) as an ATIF message."""
    if isinstance(content, str):
        return content
    parts = []
    for part in as_list(content):
        part = as_dict(part)
        if part.get("type") == "text":
            parts.append(text_part(as_str(part.get("text")) or ""))
        elif part.get("type") == "imageUrl":
            parts.append(url_image(as_dict(part.get("imageUrl")).get("url")))
    return plain_or_parts(parts)


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    document, problems = read_json_document(session.source)
    builder = TrajectoryBuilder(ATIF_NAME, model_name=session.model,
                                session_id=session_id(session.source, document))
    for problem in problems:
        builder.warn(problem)
    history = document.get("history")
    if not isinstance(history, list):
        builder.warn("the session holds no history list")
        history = []
    _History(builder).run(history)
    builder.extra.update({k: v for k, v in {
        "title": as_str(document.get("title")), "mode": as_str(document.get("mode")),
        "session_usage": document.get("usage") if isinstance(document.get("usage"), dict) else None,
        "format": session.extra.get("format")}.items() if v})
    return builder.build()


class _History:
    """Walks the history items, one step (or two: context, then the message) per item."""

    def __init__(self, builder: TrajectoryBuilder):
        self.builder = builder
        self.thinking: list[str] = []    # `thinking` messages waiting for the reply they precede

    def run(self, history: list) -> None:
        for index, item in enumerate(history):
            if not isinstance(item, dict) or not isinstance(item.get("message"), dict):
                self.builder.warn(f"history item {index} holds no message; skipped")
                continue
            self.item(item, item["message"])
        if self.thinking:  # reasoning of a reply that was never recorded
            self.builder.agent("", reasoning="\n\n".join(self.thinking), llm_call_count=1)

    def item(self, item: dict, message: dict) -> None:
        role = message.get("role")
        if role == "user":
            self.context(item)
            self.builder.user(content_parts(message.get("content")))
        elif role == "thinking":
            text = content_text(message.get("content"))
            if text:
                self.thinking.append(text)
        elif role == "assistant" and isinstance(item.get("conversationSummary"), str):
            self.builder.system(item["conversationSummary"], extra={"kind": "compaction"})
        elif role == "assistant":
            self.assistant(item, message)
        elif role == "tool":
            join_result(self.builder, as_str(message.get("toolCallId")), content_parts(message.get("content")))
        elif role == "system":
            self.builder.system(content_parts(message.get("content")), extra={"kind": "system"})
        else:
            self.builder.warn(f"message with unknown role {role!r} skipped")

    def context(self, item: dict) -> None:
        """Context items attached to a prompt (files, URLs, rules): not typed, so a system step."""
        texts = [as_str(as_dict(c).get("content")) for c in as_list(item.get("contextItems"))]
        texts = [t for t in texts if t]
        if texts:
            self.builder.system("\n\n".join(texts), extra={"kind": "context_items"})

    def assistant(self, item: dict, message: dict) -> None:
        reasoning = self.thinking + [as_str(as_dict(item.get("reasoning")).get("text")) or ""]
        self.thinking = []
        usage = as_dict(message.get("usage"))
        step = self.builder.agent(content_text(message.get("content")),
                                  model_name=item_model(item),
                                  reasoning="\n\n".join(t for t in reasoning if t) or None,
                                  metrics=usage_metrics(usage), llm_call_count=1)
        states = {as_str(as_dict(s).get("toolCallId")): as_dict(s) for s in as_list(item.get("toolCallStates"))}
        for call in as_list(message.get("toolCalls")):
            call = as_dict(call)
            call_id = as_str(call.get("id"))
            state = states.get(call_id, {})
            function = as_dict(call.get("function"))
            arguments = state["parsedArgs"] if isinstance(state.get("parsedArgs"), dict) else \
                json_arguments(function.get("arguments"))
            call_id = self.builder.tool_call(step, call_id, as_str(function.get("name")) or "", arguments)
            if state:
                self.result(call_id, state)

    def result(self, call_id: str, state: dict) -> None:
        status = as_str(state.get("status"))
        output = [as_str(as_dict(o).get("content")) or "" for o in as_list(state.get("output"))]
        if not output and status not in ("errored", "canceled"):
            return  # not run (yet)
        extra = {k: v for k, v in {"is_error": status in ("errored", "canceled") or None,
                                   "status": status if status not in (None, "done") else None}.items() if v}
        self.builder.tool_result(call_id, "\n".join(output), extra=extra or None)


def usage_metrics(usage: dict) -> dict | None:
    """A reply's usage: OpenAI's snake case, or the camel case of Continue's `Usage` type."""
    prompt = as_int(usage.get("prompt_tokens", usage.get("promptTokens")))
    if prompt is None:
        return None
    details = as_dict(usage.get("prompt_tokens_details") or usage.get("promptTokensDetails"))
    cached = as_int(details.get("cached_tokens", details.get("cachedTokens"))) or 0
    write = as_int(details.get("cache_write_tokens", details.get("cacheWriteTokens"))) or 0
    if "cache_read_tokens" in details or "cache_write_tokens" in details:  # beside the prompt (Anthropic)
        prompt += (as_int(details.get("cache_read_tokens")) or 0) + write
    reasoning = as_int(as_dict(usage.get("completion_tokens_details") or usage.get("completionTokensDetails"))
                       .get("reasoning_tokens"))
    extra = {k: v for k, v in {"cache_write_tokens": write or None, "reasoning_tokens": reasoning or None}.items() if v}
    return metrics(prompt, as_int(usage.get("completion_tokens", usage.get("completionTokens"))), cached,
                   extra=extra)
