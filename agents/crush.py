"""Crush (charmbracelet/crush): one SQLite database per project, `<project>/.crush/crush.db`.

Finding them: Crush records every project it ran in, with its data directory, in
`${CRUSH_GLOBAL_DATA:-${XDG_DATA_HOME:-~/.local/share}/crush}/projects.json`
(`{"projects": [{"path", "data_dir", "last_accessed"}]}`, internal/projects/projects.go); a
`.crush/crush.db` in the current directory, its parents and the directories known to the index
is found too (`agents/projects.py`), for projects used before Crush kept that list.

The working directory is the directory holding `.crush` (Crush resolves the nearest `.crush`
upward; there is no cwd column upstream; a `workspace_cwd` column, where a release has one,
wins). With a custom data directory, it is the project `projects.json` names for it.

Schema (internal/db/migrations): `sessions(id, parent_session_id, title, message_count,
prompt_tokens, completion_tokens, cost, created_at, updated_at, ...)` and `messages(id,
session_id, role, parts, model, provider, is_summary_message, created_at, ...)`. `parts` is a
JSON array of `{type, data}`: text, reasoning, image_url, binary, tool_call (input is a JSON
string), tool_result (in `role: "tool"` messages, joined by `tool_call_id`), finish,
shell_command. Timestamps are written in seconds although the schema comments once said
milliseconds; both are read.

Sub-agents: the `agent` tool runs a task session whose id is the tool call's id (later
`<message id>$$<tool call id>`), with `parent_session_id` set; it is embedded in its parent's
document and referenced from the call's result.

Tokens: Crush keeps none per message. `sessions.prompt_tokens`/`completion_tokens` are
overwritten at each model call (internal/agent/agent.go `updateSessionUsage` assigns, it does not
add): they are the last call's counts, the size of the context, not session totals. They go to
`final_metrics.extra` under names that say so. `sessions.cost` does accumulate, and a task's cost
is added to its parent's (agent-tool.go), so it is the session's `total_cost_usd` as is.
"""

from __future__ import annotations

import os
import sqlite3

from core import mounts, safepath, storefs

from agents import projects, session_totals, sqlite_extract, sqlite_ro
from agents.base import (Session, as_dict, as_list, as_str, env_dir, epoch, iso, one_line,
                         open_binary, unique_files)
from atif.build import image_part, text_part, TrajectoryBuilder, unreadable_database
from atif.serialize import loads

NAME = "crush"
PREFIX = "cr"
STORES_IN_PROJECTS = True  # found through agents/projects.py
ATIF_NAME = "crush"
VERSION = 1

DATA_DIR = ".crush"
DB_NAME = "crush.db"


# discovery --------------------------------------------------------------------------------------
def projects_file(env) -> str:
    base = env.get("CRUSH_GLOBAL_DATA") or os.path.join(
        env_dir(env, "XDG_DATA_HOME", ".local", "share"), "crush")
    return os.path.join(base, "projects.json")


def registered_projects(env) -> list[tuple[str, str]]:
    """(project path, data directory) pairs from Crush's projects.json."""
    try:
        with open_binary(projects_file(env)) as handle:
            listed = as_list(as_dict(loads(handle.read())).get("projects"))
    except (OSError, ValueError):
        return []
    found = []
    avoided = mounts.avoided(env)
    for entry in listed:
        path, data_dir = as_str(as_dict(entry).get("path")), as_str(as_dict(entry).get("data_dir"))
        if path and data_dir:
            data_dir = data_dir if os.path.isabs(data_dir) else os.path.join(path, data_dir)
            resolved = safepath.resolve(data_dir, avoided)  # a listed path is untrusted: no NUL, no stat into a hung mount
            if resolved and safepath.usable(path) and not mounts.inside(resolved, avoided):
                found.append((path, resolved))
    return found


def sources(env, session_dirs=()):
    candidates = [os.path.join(data_dir, DB_NAME) for _, data_dir in registered_projects(env)]
    candidates += [os.path.join(d, DATA_DIR, DB_NAME) for d in projects.candidate_dirs(env, session_dirs)]
    return unique_files(candidates)


def dependencies(source: str, env) -> list[str]:
    return sqlite_ro.fingerprint_paths(source)


def project_dir(db_path: str, env) -> str | None:
    """The directory holding the data directory, or the project projects.json names for it."""
    data_dir = os.path.dirname(os.path.abspath(db_path))
    if os.path.basename(data_dir) == DATA_DIR:
        return os.path.dirname(data_dir)
    for path, registered in registered_projects(env):
        if storefs.realpath(registered) == storefs.realpath(data_dir):
            return path
    return None


SESSION_FIELDS = ("id", "parent_session_id", "title", "message_count", "prompt_tokens",
                  "completion_tokens", "cost", "created_at", "updated_at", "workspace_cwd")


def scan(source: str, env) -> list[Session]:
    """Top-level sessions (sub-agent sessions are embedded in their parents), in one query."""
    rows = sqlite_ro.listed(source, env, _top_level_rows)
    project = project_dir(source, env)
    found = []
    for row in rows:
        record = dict(zip(SESSION_FIELDS, row))
        title = first_text(row[-2]) or record["title"] or ""
        found.append(Session(
            agent=NAME, native_id=str(record["id"]), source=source,
            started=epoch(record["created_at"]), cwd=record["workspace_cwd"] or project,
            title=one_line(title), model=row[-1], locator=str(record["id"]),
            extra={"format": "sqlite", "native_title": record["title"]}))
    return found


def _top_level_rows(connection) -> list[tuple]:
    """Each top-level session's fields, its first user message's parts and first model."""
    fields = sqlite_ro.select_list(SESSION_FIELDS, sqlite_ro.columns(connection, "sessions"))
    return connection.execute(
        f"SELECT {fields}, " + sqlite_ro.capped(
            "(SELECT parts FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
            " ORDER BY m.created_at, m.rowid LIMIT 1)") + ", " + sqlite_ro.capped(
            "(SELECT model FROM messages m WHERE m.session_id = s.id AND m.role = 'assistant' "
            " AND m.model IS NOT NULL AND m.model != '' ORDER BY m.created_at, m.rowid LIMIT 1)")
        + " FROM sessions s WHERE s.parent_session_id IS NULL OR s.parent_session_id = ''").fetchall()


# parts --------------------------------------------------------------------------------------------
def parse_parts(raw) -> tuple[list[dict], bool]:
    """`[{type, data}]` from the parts column, and whether it could be read."""
    try:
        parsed = loads(raw) if raw else []
    except (ValueError, TypeError):
        return [], False
    if not isinstance(parsed, list):
        return [], False
    return [{"type": p.get("type"), "data": as_dict(p.get("data"))} for p in parsed
            if isinstance(p, dict)], True


def first_text(raw) -> str:
    parts, _ = parse_parts(raw)
    return "\n".join(p["data"]["text"] for p in parts
                     if p["type"] == "text" and isinstance(p["data"].get("text"), str)
                     and not p["data"].get("hidden"))


# translation --------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    session_id = session.locator or session.native_id
    try:
        connection = sqlite_ro.shared(session.source, env)  # one snapshot for all of the store's sessions
    except sqlite_ro.StoreError as exc:
        return unreadable_database(ATIF_NAME, session_id, str(exc))
    try:
        return SessionReader(connection).document(session_id)
    except sqlite3.DatabaseError as exc:
        return unreadable_database(ATIF_NAME, session_id, f"{session.source}: {exc}")


class SessionReader:
    """Reads sessions from one open database; sub-agent sessions recursively. What one
    document reads is bounded (`sqlite_ro.RowBudget`)."""

    MESSAGE_FIELDS = ("id", "role", "parts", "model", "provider", "is_summary_message",
                      "created_at", "finished_at")

    def __init__(self, connection):
        self.connection = connection
        self.session_columns = sqlite_ro.columns(connection, "sessions")
        self.message_columns = sqlite_ro.columns(connection, "messages")
        self.budget = sqlite_ro.RowBudget()

    def row(self, session_id: str) -> dict | None:
        found = self.budget.select(
            self.connection, sqlite_ro.fields_of(SESSION_FIELDS, self.session_columns),
            "FROM sessions s WHERE s.id = ?", (session_id,), "session row")
        return dict(zip(SESSION_FIELDS, found[0])) if found else None

    def messages(self, session_id: str) -> list[dict]:
        """The messages in order (those read before a damaged page stopped the reading)."""
        rows = self.budget.select(
            self.connection, sqlite_ro.fields_of(self.MESSAGE_FIELDS, self.message_columns, "m"),
            "FROM messages m WHERE m.session_id = ? ORDER BY m.created_at, m.rowid",
            (session_id,), "messages")
        return [dict(zip(self.MESSAGE_FIELDS, row)) for row in rows]

    def children(self, session_id: str) -> list[str]:
        return [row[0] for row in self.budget.select(
            self.connection, ["id"], "FROM sessions WHERE parent_session_id = ? "
            "ORDER BY created_at, rowid", (session_id,), "sub-agent sessions")]

    def document(self, session_id: str, depth: int = 0) -> dict:
        record = self.row(session_id)
        builder = TrajectoryBuilder(ATIF_NAME, session_id=session_id)
        if record is None:
            builder.warn(f"session {session_id} is no longer in the database")
            return builder.build()
        child_ids = [] if depth > 8 else self.children(session_id)
        own = self.budget.take_warnings()
        children = [(c, self.document(c, depth + 1)) for c in child_ids]
        messages = self.messages(session_id)
        translator = Translator(builder, children)
        translator.run(messages)
        translator.finish()
        for problem in own + self.budget.take_warnings():
            builder.warn(problem)
        builder.model_name = translator.first_model
        builder.extra = {k: v for k, v in (("title", record["title"]),
                                           ("message_count", record["message_count"])) if v}
        doc = builder.build()
        session_totals.apply(doc, cost=record["cost"] if isinstance(record["cost"], (int, float)) else None,
                             includes_subagents=True, extra=last_call_tokens(record))
        return doc


def last_call_tokens(record: dict) -> dict | None:
    prompt, completion = record.get("prompt_tokens"), record.get("completion_tokens")
    if not prompt and not completion:
        return None
    return {"last_call_prompt_tokens": prompt, "last_call_completion_tokens": completion,
            "tokens_note": "Crush records tokens per session only, overwritten at every model call: "
                           "these are the last call's counts (the context size), not totals"}


class Translator:
    def __init__(self, builder: TrajectoryBuilder, children: list[tuple]):
        self.builder = builder
        self.children = children        # (session id, document)
        self.referenced: set[str] = set()
        self.first_model = None

    def run(self, messages: list[dict]) -> None:
        for message in messages:
            parts, readable = parse_parts(message["parts"])
            if not readable:
                self.builder.warn(f"message {message['id']}: parts is not a JSON array; skipped")
                continue
            role = message["role"]
            when = iso(message["created_at"])
            if role == "assistant":
                self.assistant(message, parts, when)
            elif role == "tool":
                self.tool(parts, when)
            elif role == "system":
                self.builder.system(texts(parts), when, extra={"kind": "system_message"})
            else:
                self.user(parts, when)

    def assistant(self, message: dict, parts: list[dict], when) -> None:
        model = message["model"] or None
        self.first_model = self.first_model or model
        step = self.builder.agent(texts(parts), when, model_name=model, llm_call_count=1,
                                  reasoning=reasoning(parts) or None)
        extra = {}
        for part in parts:
            data = part["data"]
            if part["type"] == "tool_call":
                self.builder.tool_call(step, as_str(data.get("id")), as_str(data.get("name")) or "unknown",
                                       parse_input(data.get("input")),
                                       extra={"finished": False} if data.get("finished") is False else None)
            elif part["type"] == "finish":
                extra.update(finish_extra(data))
        if message["provider"]:
            extra["provider"] = message["provider"]
        if message["is_summary_message"]:
            extra["kind"] = "summary"
        step.extra = extra or None

    def tool(self, parts: list[dict], when) -> None:
        for part in parts:
            if part["type"] != "tool_result":
                continue
            data = part["data"]
            call_id = as_str(data.get("tool_call_id")) or ""
            content = result_content(data)
            extra = {"is_error": True} if data.get("is_error") else {}
            if data.get("metadata"):
                extra["metadata"] = data["metadata"]
            refs = self.subagent_refs(call_id)
            if not self.builder.tool_result(call_id, content, extra or None, refs):
                step = self.builder.last_step or self.builder.system("", when)
                self.builder.observe(step, content, {**extra, "orphan_call_id": call_id}, refs)
                self.builder.warn(f"tool result {call_id!r} answers no recorded call")

    def user(self, parts: list[dict], when) -> None:
        content, hidden = [], []
        for part in parts:
            data = part["data"]
            if part["type"] == "text" and isinstance(data.get("text"), str):
                (hidden if data.get("hidden") else content).append(text_part(data["text"]))
            elif part["type"] == "image_url":
                content.append(image_part(url_media_type(data.get("url")), url=as_str(data.get("url"))))
            elif part["type"] == "binary":
                content.append(binary_part(data))
            elif part["type"] == "shell_command":
                self.builder.system(shell_text(data), when, extra={"kind": "shell_command"})
        if content:
            single = len(content) == 1 and content[0]["type"] == "text"
            self.builder.user(content[0]["text"] if single else content, when)
        for part in hidden:
            self.builder.system(part["text"], when, extra={"kind": "continuation"})

    def subagent_refs(self, call_id: str) -> list | None:
        for child_id, doc in self.children:
            if child_id not in self.referenced and call_id and (
                    child_id == call_id or child_id.endswith("$$" + call_id)):
                self.referenced.add(child_id)
                return self.builder.embed(doc, f"crush-{child_id}")
        return None

    def finish(self) -> None:
        """Sub-sessions no call names (title generation in some releases) get a step of their own."""
        for child_id, doc in self.children:
            if child_id not in self.referenced:
                kind = "title_generation" if child_id.startswith("title-") else "subagent"
                step = self.builder.system(f"sub-session {child_id}", extra={"kind": kind})
                self.builder.observe(step, None, subagents=self.builder.embed(doc, f"crush-{child_id}"))


def texts(parts: list[dict]) -> str:
    return "\n\n".join(p["data"]["text"] for p in parts
                       if p["type"] == "text" and isinstance(p["data"].get("text"), str))


def reasoning(parts: list[dict]) -> str:
    return "\n\n".join(p["data"]["thinking"] for p in parts
                       if p["type"] == "reasoning" and isinstance(p["data"].get("thinking"), str)
                       and p["data"]["thinking"])


def parse_input(value):
    """Tool input is stored as a JSON string; kept as text when it is not JSON (cut mid-stream)."""
    if not isinstance(value, str):
        return value
    try:
        return loads(value) if value.strip() else {}
    except ValueError:
        return {"input": value}


def finish_extra(data: dict) -> dict:
    extra = {"finish_reason": data.get("reason")} if data.get("reason") else {}
    for key in ("message", "details"):
        if data.get(key):
            extra[f"finish_{key}"] = data[key]
    return extra


def result_content(data: dict):
    mime = as_str(data.get("mime_type"))
    if data.get("data") and mime and mime.startswith("image/"):
        parts = [image_part(mime, data["data"])]
        if data.get("content"):
            parts.insert(0, text_part(str(data["content"])))
        return parts
    return str(data.get("content") or "")


def url_media_type(url) -> str | None:
    if isinstance(url, str) and url.startswith("data:") and ";" in url:
        return url[5:url.index(";")]
    lowered = str(url or "").lower()
    for ext, media in ((".png", "image/png"), (".jpg", "image/jpeg"), (".jpeg", "image/jpeg"),
                       (".gif", "image/gif"), (".webp", "image/webp")):
        if lowered.endswith(ext):
            return media
    return None


def binary_part(data: dict) -> dict:
    """An attachment: images as image parts, anything else named (its bytes are not copied)."""
    mime = as_str(data.get("MIMEType")) or as_str(data.get("mime_type"))
    if mime and mime.startswith("image/"):
        return image_part(mime, as_str(data.get("Data")) or as_str(data.get("data")))
    return text_part(f"[attachment {data.get('Path') or data.get('path') or ''} ({mime or 'unknown type'})]")


def shell_text(data: dict) -> str:
    return f"$ {data.get('command', '')}\n{data.get('output', '')}\n(exit code {data.get('exit_code')})"


# the archive's interface (discovery/archive.py): one session's rows as a database of their own -------------
def extract(session: Session, env) -> bytes:
    """The store's schema with only this session's rows (`session_rows`): not the other
    sessions', nor the file history Crush keeps (`files`, which translation does not read)."""
    return sqlite_extract.image(session.source, session_rows, session.locator or session.native_id)


def extract_signature(session: Session, env) -> str | None:
    return sqlite_extract.signature(session.source, session_rows, session.locator or session.native_id)


def session_rows(connection) -> list[tuple[str, str]]:
    """What `translate` reads of a session: its row and its task sessions' (embedded), and
    their messages."""
    tree = sqlite_extract.tree(connection, "sessions", "parent_session_id")
    return [("sessions", f"id IN {tree}"), ("messages", f"session_id IN {tree}")]
