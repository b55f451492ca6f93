"""pi coding agent (badlogic/pi-mono): one tree-shaped JSONL file per session.

Store: `${PI_CODING_AGENT_DIR:-~/.pi/agent}/sessions/--<cwd with / as ->--/<ts>_<uuid>.jsonl`;
`PI_CODING_AGENT_SESSION_DIR` replaces the whole sessions directory.

Line 1 is the header `{type:"session", version, id, timestamp, cwd}`. Every later entry has an
`id` and a `parentId` (format v2+; v1 files are linear), so a session is a tree: going back with
`/tree` and prompting again starts a new branch in the same file. The conversation pi resumes is
the path from the last entry to the root, and that path is what is translated; entries on
abandoned branches are counted in `extra.entries_off_path`. Entry types: `message` (roles
`user`, `assistant`, `toolResult`, `bashExecution`, `custom`), `model_change`,
`thinking_level_change`, `compaction`, `branch_summary`, `custom_message`, `custom`, `label`,
`session_info`. Usage is per assistant message: `{input, output, cacheRead, cacheWrite,
totalTokens, cost.total}`, `input` excluding the cache buckets.

oh-my-pi (`agents/omp.py`), a fork, writes the same format with a few more records, read here
too: a `title` record first (`{type: "title", v, title, updatedAt}`, padded so that it can be
rewritten in place), `custom` records of its own (`tool_execution_start`, `session_exit`),
`ttsr_injection` (the rules injected), a `model_change` naming `model` ("provider/id") instead
of `modelId`, and a bash result's exit code in `details.exitCode`.
"""

from __future__ import annotations

import glob
import os

from agents.base import (JsonlReader, Session, as_dict, as_int, as_list, as_str, connected_leaf,
                         epoch, head_records, home, iso, join_result, mtime, one_line, text_of)
from atif.build import image_part, metrics, plain_or_parts, text_part, TrajectoryBuilder
from core import storefs

NAME = "pi"
PREFIX = "pi"
ATIF_NAME = "pi"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("pi", "--session", "{path}"), "resume_prompt": ("pi", "--session", "{path}", "-p", "{prompt}"),
       "start": ("pi", "{prompt}"), "start_prompt": ("pi", "-p", "{prompt}"), "checked": "0.73.1"}
VERSION = 2

KNOWN_ENTRIES = {"session", "message", "model_change", "thinking_level_change", "compaction",
                 "branch_summary", "custom_message", "custom", "label", "session_info",
                 "ttsr_injection"}


def sessions_dir(env) -> str:
    explicit = env.get("PI_CODING_AGENT_SESSION_DIR")
    if explicit:
        return explicit
    agent_dir = env.get("PI_CODING_AGENT_DIR") or os.path.join(home(env), ".pi", "agent")
    return os.path.join(agent_dir, "sessions")


def sources(env):
    return session_files(sessions_dir(env))


def session_files(root: str) -> list[str]:
    found = storefs.glob(os.path.join(glob.escape(root), "*", "*.jsonl"))
    found += storefs.glob(os.path.join(glob.escape(root), "*.jsonl"))  # --session-dir: flat
    return sorted(found)


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    return [scan_file(source, NAME)]


def scan_file(source: str, agent: str) -> Session:
    header: dict = {}
    title, model = "", None
    for record in head_records(source):
        kind = record.get("type")
        if kind == "session" and not header:
            header = record
        elif kind == "model_change" and model is None:
            model = changed_model(record)
        elif kind == "message":
            message = as_dict(record.get("message"))
            if message.get("role") == "user" and not title:
                title = one_line(text_of(message.get("content")))
            if message.get("role") == "assistant" and model is None:
                model = as_str(message.get("model"))
        if title and model:
            break
    native_id = as_str(header.get("id")) or _id_from_name(source)
    return Session(agent=agent, native_id=native_id, source=source,
                   started=epoch(header.get("timestamp")) or mtime(source),
                   cwd=as_str(header.get("cwd")) or None, title=title, model=model,
                   extra={"format": f"v{as_int(header.get('version')) or 1}"})


def changed_model(record: dict) -> str | None:
    """The model a `model_change` names: pi's `modelId`, oh-my-pi's `model`."""
    return as_str(record.get("modelId")) or as_str(record.get("model"))


def _id_from_name(path: str) -> str:
    """`<timestamp>_<uuid>.jsonl` -> uuid (only for a file whose header is unreadable)."""
    stem = os.path.basename(path)[: -len(".jsonl")]
    return stem.rsplit("_", 1)[-1]


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    return translate_file(session, ATIF_NAME)


def translate_file(session: Session, agent_name: str) -> dict:
    reader = JsonlReader(session.source)
    records = list(reader)
    header = next((r for r in records if r.get("type") == "session"), {})
    title = next((as_str(r.get("title")) for r in records if r.get("type") == "title"), None)
    entries = [r for r in records if r.get("type") not in ("session", "title")]
    path, off_path = active_path(entries)
    builder = TrajectoryBuilder(agent_name, session_id=as_str(header.get("id")) or session.native_id)
    for problem in reader.problems():
        builder.warn(problem)
    if not header:
        builder.warn("the session header (first line) is missing")
    _Translator(builder).run(path)
    builder.model_name = _last_model(path)
    builder.extra.update({k: v for k, v in {
        "format_version": as_int(header.get("version")), "entries_off_path": off_path or None,
        "title": title or None,
        "parent_session": as_str(header.get("parentSession") or header.get("branchedFrom")),
    }.items() if v is not None})
    return builder.build()


def active_path(entries: list[dict]) -> tuple[list[dict], int]:
    """The entries from the root to the last entry (the branch pi resumes), and how many entries
    lie on other branches. Files without ids (format v1) are one linear branch."""
    if not entries or not any("parentId" in e for e in entries):
        return entries, 0
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    path, seen = [], set()
    current = connected_leaf(entries, "id", "parentId") or entries[-1]
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path, len(entries) - len(path)


def _last_model(path: list[dict]) -> str | None:
    model = None
    for entry in path:
        if entry.get("type") == "model_change":
            model = changed_model(entry) or model
        message = as_dict(entry.get("message"))
        if entry.get("type") == "message" and message.get("role") == "assistant":
            model = as_str(message.get("model")) or model
    return model


def content_parts(content):
    """pi's content (a string or text/image blocks) as an ATIF message: a plain string unless
    images are present."""
    if isinstance(content, str):
        return content
    parts = []
    for block in as_list(content):
        block = as_dict(block)
        if block.get("type") == "text":
            parts.append(text_part(as_str(block.get("text")) or ""))
        elif block.get("type") == "image":
            parts.append(image_part(as_str(block.get("mimeType")), block.get("data")))
    return plain_or_parts(parts)


class _Translator:
    """Walks the active path, turning each entry into steps."""

    def __init__(self, builder: TrajectoryBuilder):
        self.builder = builder
        self.thinking_level: str | None = None

    def run(self, path: list[dict]) -> None:
        for entry in path:
            kind = as_str(entry.get("type"))
            handler = getattr(self, f"on_{kind}", None)
            if handler is not None:
                handler(entry, iso(entry.get("timestamp")))
            elif kind not in KNOWN_ENTRIES:
                self.builder.warn(f"unknown entry type {kind!r} skipped")

    def on_thinking_level_change(self, entry: dict, when) -> None:
        level = as_str(entry.get("thinkingLevel"))
        self.thinking_level = None if level in (None, "off") else level

    def on_compaction(self, entry: dict, when) -> None:
        self.builder.system(as_str(entry.get("summary")) or "", when,
                            extra={"kind": "compaction", "tokens_before": entry.get("tokensBefore"),
                                   "first_kept_entry_id": entry.get("firstKeptEntryId")})

    def on_branch_summary(self, entry: dict, when) -> None:
        self.builder.system(as_str(entry.get("summary")) or "", when,
                            extra={"kind": "branch_summary", "from_id": entry.get("fromId")})

    def on_custom_message(self, entry: dict, when) -> None:
        self.builder.system(content_parts(entry.get("content")), when,
                            extra={"kind": f"custom:{entry.get('customType')}"})

    def on_session_info(self, entry: dict, when) -> None:
        if as_str(entry.get("name")):
            self.builder.extra["name"] = entry["name"]


    def on_message(self, entry: dict, when) -> None:
        message = as_dict(entry.get("message"))
        role = message.get("role")
        if role == "user":
            self.builder.user(content_parts(message.get("content")), when)
        elif role == "assistant":
            self.assistant(message, when)
        elif role == "toolResult":
            self.tool_result(message, when)
        elif role == "bashExecution":
            self.bash_execution(message, when)
        elif role in ("custom", "hookMessage"):
            self.builder.system(content_parts(message.get("content")), when,
                                extra={"kind": f"custom:{message.get('customType')}"})
        else:
            self.builder.warn(f"message with unknown role {role!r} skipped")

    def assistant(self, message: dict, when) -> None:
        texts, thoughts, calls = [], [], []
        for block in as_list(message.get("content")):
            block = as_dict(block)
            if block.get("type") == "text":
                texts.append(as_str(block.get("text")) or "")
            elif block.get("type") == "thinking":
                thoughts.append(as_str(block.get("thinking")) or "")
            elif block.get("type") == "toolCall":
                calls.append(block)
        extra = {k: v for k, v in {"stop_reason": message.get("stopReason"),
                                   "error": message.get("errorMessage"),
                                   "provider": message.get("provider")}.items() if v}
        step = self.builder.agent("\n\n".join(t for t in texts if t), when,
                                  model_name=as_str(message.get("model")),
                                  reasoning_effort=self.thinking_level,
                                  reasoning="\n\n".join(t for t in thoughts if t) or None,
                                  metrics=usage_metrics(message.get("usage")), llm_call_count=1,
                                  extra=extra or None)
        for call in calls:
            self.builder.tool_call(step, as_str(call.get("id")), as_str(call.get("name")) or "",
                                   call.get("arguments"))

    def tool_result(self, message: dict, when) -> None:
        content = content_parts(message.get("content"))
        extra = {k: v for k, v in {"is_error": bool(message.get("isError")) or None,
                                   "exit_code": as_int(as_dict(message.get("details")).get("exitCode"))}.items()
                 if v is not None}
        call_id = as_str(message.get("toolCallId")) or ""
        join_result(self.builder, call_id, content, when, extra,
                    tool_name=as_str(message.get("toolName")))

    def bash_execution(self, message: dict, when) -> None:
        """A command the user ran with `!` in the TUI: what they typed, then its output."""
        self.builder.user(f"!{message.get('command') or ''}", when, extra={"kind": "bash"})
        extra = {k: v for k, v in {"kind": "bash_output", "exit_code": message.get("exitCode"),
                                   "cancelled": message.get("cancelled") or None,
                                   "truncated": message.get("truncated") or None}.items()
                 if v is not None}
        self.builder.system(as_str(message.get("output")) or "", when, extra=extra)


def usage_metrics(usage) -> dict | None:
    usage = as_dict(usage)
    if not usage:
        return None
    fresh, output = as_int(usage.get("input")), as_int(usage.get("output"))
    read, write = as_int(usage.get("cacheRead")) or 0, as_int(usage.get("cacheWrite")) or 0
    prompt = None if fresh is None else fresh + read + write
    cost = as_dict(usage.get("cost")).get("total")
    extra = {k: v for k, v in {"cache_write_tokens": write or None,
                               "reasoning_tokens": as_int(usage.get("reasoning"))}.items()
             if v is not None}
    return metrics(prompt=prompt, completion=output, cached=read if prompt is not None else None,
                   cost=cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
                   extra=extra)
