"""Goose (block/goose).

Since v1.20 every session is a row of `sessions.db` (`sessions`, and `messages` whose
`content_json` is the message's content blocks), in `$GOOSE_PATH_ROOT/data/sessions/`, else
`${XDG_DATA_HOME:-~/.local/share}/goose/sessions/`. Before, each session was `<id>.jsonl` in that
directory (or `~/.goose/sessions/`): a metadata line, then one message per line. Goose imports the
legacy files into a new database, so an id found in both is read from the database (sources list
the database first, and the catalog keeps the first source of an id).

Content blocks: `text`, `thinking`/`redactedThinking`, `image`, `toolRequest {id, toolCall}` on
assistant messages and `toolResponse {id, toolResult}` on the following user message (joined by
id), plus notices (`systemNotification`, `contextLengthExceeded`, ...). `toolCall`/`toolResult`
are Rust results: `{status: "success", value}` or `{status: "error", error}`.

Tokens: recent versions put a `usage` object in each assistant message's `metadata_json`; it
becomes the step's metrics. Otherwise the session's `accumulated_*` columns (or the legacy
metadata line's) are the only figures, and go to `final_metrics` (`agents/session_totals.py`).
Goose's `input_tokens` is taken as the whole prompt, cache reads included.
Columns vary between releases, so they are probed (`sqlite_ro.columns`).
"""

from __future__ import annotations

import os
import sqlite3

from agents import session_totals, sqlite_extract, sqlite_ro
from core import compiledre, storefs
from agents.base import (JsonlReader, Session, as_dict, as_int, as_list, as_str, env_dir, epoch,
                         head_records, home, iso, one_line)
from atif.build import (TrajectoryBuilder, image_part, metrics, plain_or_parts, text_part,
                        unreadable_database)
from atif.serialize import loads

NAME = "goose"
PREFIX = "gs"
ATIF_NAME = "goose"
VERSION = 1

DB_NAME = "sessions.db"
_NAIVE_TIME = compiledre.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?$")


# discovery --------------------------------------------------------------------------------------
def session_dirs(env) -> list[str]:
    root = env.get("GOOSE_PATH_ROOT")
    if root:
        current = os.path.join(root, "data", "sessions")
    else:
        current = os.path.join(env_dir(env, "XDG_DATA_HOME", ".local", "share"), "goose", "sessions")
    return [current, os.path.join(home(env), ".goose", "sessions")]


def sources(env):
    dirs = session_dirs(env)
    database = os.path.join(dirs[0], DB_NAME)
    if storefs.isfile(database):
        yield database
    for directory in dirs:
        try:
            names = sorted(storefs.listdir(directory))
        except OSError:
            continue
        for name in names:
            if name.endswith(".jsonl"):
                yield os.path.join(directory, name)


def dependencies(source: str, env) -> list[str]:
    return sqlite_ro.fingerprint_paths(source) if source.endswith(".db") else [source]


def scan(source: str, env) -> list[Session]:
    return scan_database(source, env) if source.endswith(".db") else [scan_legacy(source)]


def utc_epoch(value) -> float | None:
    """SQLite's CURRENT_TIMESTAMP is UTC without an offset; other values are read as written."""
    if isinstance(value, str) and _NAIVE_TIME.match(value.strip()):
        value = value.strip().replace(" ", "T") + "+00:00"
    return epoch(value)


def scan_database(path: str, env) -> list[Session]:
    rows = sqlite_ro.listed(path, env, _session_rows)
    ids = {row[0] for row in rows}
    found = []
    for row in rows:
        record = dict(zip(SESSION_FIELDS, row[:-1]))
        if record["parent_session_id"] in ids:
            continue  # embedded in its parent's document
        found.append(Session(
            agent=NAME, native_id=str(record["id"]), source=path,
            started=utc_epoch(record["created_at"]), cwd=record["working_dir"] or None,
            title=one_line(first_text(row[-1]) or record["name"] or record["description"] or ""),
            model=model_of(record), locator=str(record["id"]),
            extra={"format": "sqlite", "session_type": record["session_type"] or "user",
                   "native_title": record["description"]}))
    return found


def _session_rows(connection) -> list[tuple]:
    """Each session's fields and its first user message, found in one pass over the messages (a
    subquery per session scans them all per session where no index on session_id exists)."""
    fields = sqlite_ro.select_list(SESSION_FIELDS, sqlite_ro.columns(connection, "sessions"))
    return connection.execute(
        f"SELECT {fields}, " + sqlite_ro.capped(
            "(SELECT content_json FROM messages m WHERE m.id = f.first_user)") + " FROM sessions s"
        " LEFT JOIN (SELECT session_id AS sid, MIN(id) AS first_user FROM messages"
        " WHERE role = 'user' GROUP BY session_id) f ON f.sid = s.id").fetchall()


SESSION_FIELDS = ("id", "name", "description", "session_type", "working_dir", "created_at",
                  "updated_at", "provider_name", "model_config_json", "parent_session_id",
                  "accumulated_input_tokens", "accumulated_output_tokens",
                  "accumulated_total_tokens", "accumulated_cache_read_tokens",
                  "accumulated_cache_write_tokens", "accumulated_cost")


def first_text(content_json) -> str:
    blocks = parse_blocks(content_json)[0]
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))


def model_of(record: dict) -> str | None:
    config = as_dict(parse_json(record.get("model_config_json")))
    for key in ("model_name", "modelName", "model"):
        if isinstance(config.get(key), str) and config[key]:
            return config[key]
    return None


def scan_legacy(path: str) -> Session:
    records = list(head_records(path))
    meta = records[0] if records and "role" not in records[0] else {}
    first_user = next((r for r in records if r.get("role") == "user"), {})
    created = next((r.get("created") for r in records if "created" in r), None)
    stem = os.path.basename(path)[: -len(".jsonl")]
    return Session(
        agent=NAME, native_id=stem, source=path,
        started=utc_epoch(meta.get("created_at")) or epoch(created),
        cwd=as_str(meta.get("working_dir")),
        title=one_line(text_blocks(as_list(first_user.get("content"))) or as_str(meta.get("description")) or ""),
        locator=stem, extra={"format": "legacy-jsonl", "native_title": as_str(meta.get("description"))})


# reading messages ------------------------------------------------------------------------------
def parse_json(value):
    if isinstance(value, (dict, list)):
        return value
    if not isinstance(value, (str, bytes)) or not value:
        return {}
    try:
        return loads(value)
    except ValueError:
        return {}


def parse_blocks(content_json) -> tuple[list[dict], bool]:
    """Content blocks, and whether the JSON could be read."""
    if isinstance(content_json, list):
        return [b for b in content_json if isinstance(b, dict)], True
    try:
        parsed = loads(content_json) if content_json else []
    except (ValueError, TypeError):
        return [], False
    return [b for b in as_list(parsed) if isinstance(b, dict)], isinstance(parsed, list)


def text_blocks(blocks: list) -> str:
    return "\n".join(b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str))


class Message:
    """One native message, whichever store it came from."""

    __slots__ = ("number", "message_id", "role", "blocks", "created", "metadata", "readable")

    def __init__(self, number, message_id, role, content, created, metadata):
        self.number = number
        self.message_id = message_id
        self.role = role
        self.blocks, self.readable = parse_blocks(content)
        self.created = created
        self.metadata = as_dict(parse_json(metadata))


def database_messages(connection, session_id: str, budget) -> list[Message]:
    """The session's messages in order (those read before a damaged page stopped the reading),
    within the document's `budget` (`sqlite_ro.RowBudget`)."""
    present = sqlite_ro.columns(connection, "messages")
    wanted = ("id", "message_id", "role", "content_json", "created_timestamp", "metadata_json")
    order = "created_timestamp, id" if "created_timestamp" in present else "id"
    rows = budget.select(connection, sqlite_ro.fields_of(wanted, present, "messages"),
                         f"FROM messages WHERE session_id = ? ORDER BY {order}", (session_id,),
                         "messages")
    return [Message(*row) for row in rows]


# translation --------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    if session.source.endswith(".db"):
        return translate_database(session, env)
    return translate_legacy(session)


def translate_database(session: Session, env) -> dict:
    session_id = session.locator or session.native_id
    try:
        connection = sqlite_ro.shared(session.source, env)  # one snapshot for all of the store's sessions
    except sqlite_ro.StoreError as exc:
        return unreadable_database(ATIF_NAME, session_id, str(exc))
    try:
        present = sqlite_ro.columns(connection, "sessions")
        return translate_row(connection, present, session_id, sqlite_ro.RowBudget())
    except sqlite3.DatabaseError as exc:
        return unreadable_database(ATIF_NAME, session_id, f"{session.source}: {exc}")


def session_row(connection, present: set[str], session_id: str, budget) -> dict | None:
    found = budget.select(connection, sqlite_ro.fields_of(SESSION_FIELDS, present),
                          "FROM sessions s WHERE s.id = ?", (session_id,), "session row")
    return dict(zip(SESSION_FIELDS, found[0])) if found else None


def translate_row(connection, present: set[str], session_id: str, budget, depth: int = 0) -> dict:
    """The document of one session and, embedded, its sub-agent sessions', all read within
    one `budget`."""
    record = session_row(connection, present, session_id, budget)
    builder = TrajectoryBuilder(ATIF_NAME, model_name=model_of(record or {}), session_id=session_id)
    if record is None:
        builder.warn(f"session {session_id} is no longer in the database")
        return builder.build()
    child_ids = child_sessions(connection, present, session_id, budget, depth)
    own = budget.take_warnings()
    children = [(child, translate_row(connection, present, child, budget, depth + 1))
                for child in child_ids]
    translator = Translator(builder, builder.model_name, children)
    translator.run(database_messages(connection, session_id, budget))
    translator.finish()
    for problem in own + budget.take_warnings():
        builder.warn(problem)
    builder.extra = {k: v for k, v in (("name", record["name"] or None),
                                       ("session_type", record["session_type"]),
                                       ("provider", record["provider_name"]),
                                       ("working_dir", record["working_dir"])) if v}
    doc = builder.build()
    if not translator.has_usage:
        totals_from_columns(doc, record)
    return doc


def child_sessions(connection, present: set[str], session_id: str, budget, depth: int) -> list[str]:
    """The ids of the sub-agent sessions (`parent_session_id`) to embed."""
    if "parent_session_id" not in present or depth > 8:
        return []
    return [row[0] for row in budget.select(
        connection, ["id"], "FROM sessions WHERE parent_session_id = ? ORDER BY created_at, id",
        (session_id,), "sub-agent sessions")]


def totals_from_columns(doc: dict, record: dict) -> None:
    prompt = as_int(record.get("accumulated_input_tokens"))
    completion = as_int(record.get("accumulated_output_tokens"))
    cached = as_int(record.get("accumulated_cache_read_tokens"))
    cost = record.get("accumulated_cost")
    extra = {"source": "session totals (sessions.accumulated_*): Goose recorded no per-message usage"}
    write = as_int(record.get("accumulated_cache_write_tokens"))
    if write:
        extra["cache_write_tokens"] = write
    if any(v is not None for v in (prompt, completion, cached, cost)):
        session_totals.apply(doc, prompt, completion, cached,
                             cost if isinstance(cost, (int, float)) else None,
                             includes_subagents=False, extra=extra)


def translate_legacy(session: Session) -> dict:
    reader = JsonlReader(session.source)
    meta: dict = {}
    messages = []
    for number, record in enumerate(reader):
        if number == 0 and "role" not in record:
            meta = record
            continue
        messages.append(Message(number, record.get("id"), record.get("role"), record.get("content"),
                                record.get("created"), record.get("metadata")))
    builder = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id)
    translator = Translator(builder, None, [])
    translator.run(messages)
    translator.finish()
    for problem in reader.problems():
        builder.warn(problem)
    builder.extra = {k: v for k, v in (("description", meta.get("description")),
                                       ("working_dir", meta.get("working_dir"))) if v}
    doc = builder.build()
    if not translator.has_usage:
        totals_from_columns(doc, legacy_totals(meta))
    return doc


def legacy_totals(meta: dict) -> dict:
    """The legacy metadata line's counts, under the database's column names."""
    def first(*keys):
        return next((meta[k] for k in keys if meta.get(k) is not None), None)

    return {"accumulated_input_tokens": first("accumulated_input_tokens", "input_tokens"),
            "accumulated_output_tokens": first("accumulated_output_tokens", "output_tokens")}


NOTICE_TYPES = ("systemNotification", "contextLengthExceeded", "summarizationRequested",
                "actionRequired", "toolConfirmationRequest")


class Translator:
    """Feeds native messages to the builder: one agent step per assistant message (consecutive
    parts of one reply, sharing a message id, are merged)."""

    def __init__(self, builder: TrajectoryBuilder, model: str | None, children: list[tuple]):
        self.builder = builder
        self.model = model
        self.children = children          # (session id, document) of sub-agent sessions
        self.referenced: set[str] = set()
        self.current = None               # the open agent step
        self.current_id = None
        self.has_usage = False

    def run(self, messages: list[Message]) -> None:
        for message in messages:
            if not message.readable:
                self.builder.warn(f"message {message.number}: content_json is not a JSON array; skipped")
                continue
            if message.role == "assistant":
                self.assistant(message)
            else:
                self.user(message)

    # assistant ------------------------------------------------------------------------------
    def assistant(self, message: Message) -> None:
        step = self.current
        if step is None or not message.message_id or message.message_id != self.current_id:
            step = self.builder.agent("", iso(message.created), model_name=self.model_name(message),
                                      llm_call_count=1)
        self.current, self.current_id = step, message.message_id
        texts, reasoning = [], []
        for block in message.blocks:
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                reasoning.append(block["thinking"])
            elif kind == "redactedThinking":
                step.extra = {**(step.extra or {}), "redacted_thinking": True}
            elif kind in ("toolRequest", "frontendToolRequest"):
                self.tool_request(step, block)
            elif kind in NOTICE_TYPES or kind == "image":
                texts.append(notice_text(block))
        step.message = "\n\n".join(t for t in [step.message, *texts] if t)
        if reasoning:
            step.reasoning = "\n\n".join(t for t in [step.reasoning, *reasoning] if t)
        usage = as_dict(message.metadata.get("usage"))
        if usage:
            step.metrics = usage_metrics(usage)
            self.has_usage = True

    def model_name(self, message: Message) -> str | None:
        inference = as_dict(message.metadata.get("inference"))
        return as_str(inference.get("resolvedModel")) or as_str(inference.get("requestedModel")) or self.model

    def tool_request(self, step, block: dict) -> None:
        call = as_dict(block.get("toolCall"))
        value = as_dict(call.get("value"))
        extra = {"frontend": True} if block.get("type") == "frontendToolRequest" else {}
        if call.get("status") == "error":
            extra["error"] = call.get("error")
        self.builder.tool_call(step, as_str(block.get("id")), as_str(value.get("name")) or "unknown",
                               value.get("arguments"), extra=extra or None)

    # user -----------------------------------------------------------------------------------
    def user(self, message: Message) -> None:
        self.current = None
        parts, notices = [], []
        for block in message.blocks:
            kind = block.get("type")
            if kind == "toolResponse":
                self.tool_response(block)
            elif kind == "text" and isinstance(block.get("text"), str):
                parts.append(text_part(block["text"]))
            elif kind == "image":
                parts.append(image_part(as_str(block.get("mimeType")), as_str(block.get("data"))))
            elif kind:
                notices.append((kind, notice_text(block)))
        when = iso(message.created)
        if parts:
            content = parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts
            if message.metadata.get("userVisible") is False:
                self.builder.system(content, when, extra={"kind": "agent_only_context"})
            else:
                extra = {"agent_visible": False} if message.metadata.get("agentVisible") is False else None
                self.builder.user(content, when, extra=extra)
        for kind, text in notices:
            self.builder.system(text, when, extra={"kind": kind})

    def tool_response(self, block: dict) -> None:
        call_id = as_str(block.get("id")) or ""
        result = as_dict(block.get("toolResult"))
        content, is_error = result_content(result)
        extra = {"is_error": True} if is_error else None
        refs = self.subagent_refs(content)
        if not self.builder.tool_result(call_id, content, extra, refs):
            step = self.builder.last_step or self.builder.system("")
            self.builder.observe(step, content, {**(extra or {}), "orphan_call_id": call_id}, refs)
            self.builder.warn(f"tool result {call_id!r} answers no recorded call")

    def subagent_refs(self, content) -> list | None:
        """Embed the sub-agent sessions this result names (by session id)."""
        text = content if isinstance(content, str) else ""
        refs = []
        for child_id, doc in self.children:
            if child_id not in self.referenced and child_id in text:
                self.referenced.add(child_id)
                refs += self.builder.embed(doc, f"goose-{child_id}")
        return refs or None

    def finish(self) -> None:
        """Sub-agent sessions no result named are embedded from a step of their own."""
        for child_id, doc in self.children:
            if child_id not in self.referenced:
                self.referenced.add(child_id)
                step = self.builder.system(f"sub-agent session {child_id}", extra={"kind": "subagent"})
                self.builder.observe(step, None, subagents=self.builder.embed(doc, f"goose-{child_id}"))


def notice_text(block: dict) -> str:
    for key in ("msg", "text", "message", "prompt", "reason"):
        if isinstance(block.get(key), str) and block[key]:
            return block[key]
    if block.get("type") == "image":
        return f"[image: {block.get('mimeType') or 'unknown type'}]"
    return f"[{block.get('type')}]"


def result_content(result: dict) -> tuple:
    """The result's content (text, or content parts with images) and whether it failed."""
    if result.get("status") == "error":
        return str(result.get("error") or "error"), True
    value = result.get("value")
    is_error = False
    if isinstance(value, dict):
        is_error = value.get("isError") is True
        value = value.get("content")
    parts = []
    for item in as_list(value):
        item = as_dict(item)
        if item.get("type") == "image":
            parts.append(image_part(as_str(item.get("mimeType")), as_str(item.get("data"))))
        elif isinstance(item.get("text"), str):
            parts.append(text_part(item["text"]))
        elif item.get("type") == "resource":
            resource = as_dict(item.get("resource"))
            parts.append(text_part(as_str(resource.get("text")) or f"[resource {resource.get('uri')}]"))
    return plain_or_parts(parts), is_error


def usage_metrics(usage: dict) -> dict | None:
    extra = {}
    write = as_int(usage.get("cacheWriteTokens"))
    if write:
        extra["cache_write_tokens"] = write
    if usage.get("costSource"):
        extra["cost_source"] = usage["costSource"]
    cost = usage.get("cost")
    return metrics(as_int(usage.get("inputTokens")), as_int(usage.get("outputTokens")),
                   as_int(usage.get("cacheReadTokens")),
                   cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
                   extra)


# the archive's interface (discovery/archive.py): one session's rows as a database of their own -------------
def extract(session: Session, env) -> bytes:
    """The store's schema with only this session's rows (`session_rows`)."""
    return sqlite_extract.image(session.source, session_rows, session.locator or session.native_id)


def extract_signature(session: Session, env) -> str | None:
    """None for a legacy JSONL session, whose file is archived."""
    if not session.source.endswith(".db"):
        return None
    return sqlite_extract.signature(session.source, session_rows, session.locator or session.native_id)


def session_rows(connection) -> list[tuple[str, str]]:
    """What `translate_database` reads of a session: its row and its sub-agent sessions'
    (embedded), and their messages."""
    tree = sqlite_extract.tree(connection, "sessions", "parent_session_id")
    return [("sessions", f"id IN {tree}"), ("messages", f"session_id IN {tree}")]
