"""Hermes Agent (NousResearch/hermes-agent): every session in one SQLite database.

Store: `${HERMES_HOME:-~/.hermes}/state.db` (WAL mode), plus one `state.db` per profile under
`profiles/<name>/`. Tables used: `sessions` (id, source, model, system_prompt, cwd, started_at,
parent_session_id, end_reason, token totals: input_tokens excluding cache reads and writes,
output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, costs),
`session_model_usage` (the same totals per model), and `messages` (OpenAI chat messages: roles
user/assistant/tool/system, `tool_calls` as JSON, `tool_call_id` on tool messages, reasoning
columns; `active`/`compacted` flags). Structured content is stored as JSON behind a sentinel
prefix (`\\x00json:` in older releases, `\\x01json:` now).

Usage is recorded per session, not per message, so `final_metrics` carries the session totals
(`agents/session_totals.py`). Rows a rewind (`/undo`) retired (`active=0` and not
`compacted`) are not part of the conversation and are skipped; rows archived by a compression
(`compacted=1`) are kept and flagged. A session that continues another (compression split,
sub-agent) names it in `extra.parent_session_id`; Hermes records no link from a tool call to a
child session, so children are listed as sessions of their own.

Every read goes through `agents.sqlite_ro`: a snapshot, WAL applied (the listing's one query,
on the file itself when it alone is the committed state: `sqlite_ro.listed`).
"""

from __future__ import annotations

import glob
import os
import sqlite3

from agents import session_totals, sqlite_extract, sqlite_ro
from agents.base import (Session, as_dict, as_int, as_list, as_str, chat_content, env_dir, epoch,
                         iso, join_result, json_arguments, one_line)
from atif.build import TrajectoryBuilder
from atif.serialize import loads
from core import storefs

NAME = "hermes"
PREFIX = "hm"
ATIF_NAME = "hermes-agent"
VERSION = 1

JSON_PREFIXES = ("\x00json:", "\x01json:")
SESSION_COLUMNS = ("id", "source", "model", "cwd", "started_at", "title", "parent_session_id")


def hermes_home(env) -> str:
    return env_dir(env, "HERMES_HOME", ".hermes")


def sources(env):
    root = hermes_home(env)
    found = [os.path.join(root, "state.db")]
    found += sorted(storefs.glob(os.path.join(glob.escape(root), "profiles", "*", "state.db")))
    return [path for path in found if storefs.isfile(path)]


def dependencies(source: str, env) -> list[str]:
    return sqlite_ro.fingerprint_paths(source)


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    """One query: every session with its first user message."""
    rows, schema = sqlite_ro.listed(source, env, lambda connection: _session_rows(source, connection))
    return [_session(source, row, schema) for row in rows if isinstance(row["id"], str) and row["id"]]


def _session_rows(source: str, connection) -> tuple[list, str]:
    """Each session's columns and first user message, and the schema's version."""
    connection.row_factory = sqlite3.Row
    available = sqlite_ro.columns(connection, "sessions")
    if "id" not in available:
        raise sqlite_ro.StoreError(f"{source} has no sessions table")
    wanted = [f"{sqlite_ro.capped(c)} AS {c}" if c in available else f"NULL AS {c}"
              for c in SESSION_COLUMNS]
    first_user = (sqlite_ro.capped("(SELECT content FROM messages m WHERE m.session_id = s.id"
                                   " AND m.role = 'user' ORDER BY m.id LIMIT 1)")
                  if sqlite_ro.columns(connection, "messages") else "NULL")
    rows = connection.execute(f"SELECT {', '.join(wanted)}, {first_user} AS first_user"
                              f" FROM sessions s ORDER BY s.started_at").fetchall()
    return rows, f"schema-{_schema_version(connection)}"


class _reading:
    """Turns SQLite's own errors on a damaged database into a `StoreError` naming the file."""

    def __init__(self, source: str):
        self.source = source

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, sqlite3.DatabaseError):
            raise sqlite_ro.StoreError(f"{self.source}: {exc}") from None
        return False


def _schema_version(connection) -> str:
    try:
        row = connection.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    except sqlite3.DatabaseError:
        return "unknown"
    return str(row[0]) if row else "unknown"


def _session(source: str, row, schema: str) -> Session:
    first = message_text(decode_content(row["first_user"])[0])
    extra = {"format": schema}
    if as_str(row["parent_session_id"]):
        extra["parent_session_id"] = row["parent_session_id"]
    return Session(agent=NAME, native_id=row["id"], source=source, started=epoch(row["started_at"]),
                   cwd=as_str(row["cwd"]) or None, title=one_line(first or as_str(row["title"]) or ""),
                   model=as_str(row["model"]), locator=row["id"], extra=extra)


# content -----------------------------------------------------------------------------------------
def decode_content(value) -> tuple:
    """A `messages.content` value: plain text, or structured parts behind the JSON sentinel;
    and whether it could be read (a sentinel before JSON that does not parse, damaged or nested
    deeper than the JSON reader goes, is kept as the text it is)."""
    if isinstance(value, str):
        for prefix in JSON_PREFIXES:
            if value.startswith(prefix):
                try:
                    return loads(value[len(prefix):]), True
                except ValueError:
                    return value, False
    return value, True


def message_text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(as_str(as_dict(p).get("text")) or "" for p in as_list(content)
                     if as_dict(p).get("type") in ("text", "input_text", "output_text"))


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    builder = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id)
    budget = sqlite_ro.RowBudget()
    with _reading(session.source):
        connection = sqlite_ro.shared(session.source, env)  # one snapshot for all of the store's sessions
        found = _rows(connection, budget, "sessions", "WHERE id = ?", (session.locator,))
        if not found:
            builder.warn(f"session {session.locator} is no longer in {session.source}")
            return builder.build()
        messages = _rows(connection, budget, "messages", "WHERE session_id = ? ORDER BY id",
                         (session.locator,))
        usage = _model_usage(connection, budget, session.locator)
    for problem in budget.take_warnings():
        builder.warn(problem)
    row = found[0]
    builder.model_name = as_str(row.get("model"))
    if as_str(row.get("system_prompt")):
        builder.system(row["system_prompt"], iso(row.get("started_at")), extra={"kind": "system_prompt"})
    rewound = _MessageTranslator(builder, builder.model_name).run(messages)
    builder.extra.update(_session_extra(row, rewound, usage))
    doc = builder.build()
    _apply_totals(doc, row)
    return doc


def _rows(connection, budget, table: str, rest: str, args: tuple) -> list[dict]:
    """Every column of the table's rows, as dicts (columns differ between releases), within the
    document's budget (`sqlite_ro.RowBudget`)."""
    names = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
    rows = budget.select(connection, [sqlite_ro.quoted(n) for n in names], f"FROM {table} {rest}",
                         args, table)
    return [dict(zip(names, row)) for row in rows]


def _model_usage(connection, budget, session_id: str) -> list[dict]:
    if not sqlite_ro.columns(connection, "session_model_usage"):
        return []
    rows = _rows(connection, budget, "session_model_usage", "WHERE session_id = ?", (session_id,))
    return [{k: v for k, v in r.items() if k != "session_id" and v not in (None, "")} for r in rows]


def _session_extra(row: dict, rewound: int, usage: list[dict]) -> dict:
    found = {k: row[k] for k in ("source", "parent_session_id", "end_reason", "title", "git_branch",
                                 "billing_provider", "api_call_count") if row.get(k)}
    if rewound:
        found["rewound_messages_skipped"] = rewound
    if usage:
        found["model_usage"] = usage
    return found


def _apply_totals(doc: dict, row: dict) -> None:
    fresh, read, write = (as_int(row.get(c)) for c in
                          ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
    prompt = None if fresh is None else fresh + (read or 0) + (write or 0)
    session_totals.apply(doc, prompt, as_int(row.get("output_tokens")),
                         read if prompt is not None else None, _cost(row), includes_subagents=False,
                         usage_source="sessions table (Hermes records usage per session)")
    extra = doc["final_metrics"].get("extra")
    if extra is not None:
        extra.update({c: row[c] for c in ("cache_write_tokens", "reasoning_tokens")
                      if as_int(row.get(c))})


def _cost(row: dict) -> float | None:
    """The actual cost, else the estimate, but not an estimate Hermes itself marks as unknown
    (it writes 0.0 when it has no price for the model)."""
    def number(column):
        value = row.get(column)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    if number("actual_cost_usd") is not None:
        return number("actual_cost_usd")
    return number("estimated_cost_usd") if row.get("cost_status") not in (None, "unknown") else None


class _MessageTranslator:
    def __init__(self, builder: TrajectoryBuilder, model: str | None):
        self.builder = builder
        self.model = model

    def run(self, rows: list[dict]) -> int:
        """Translate the rows (dicts: columns differ between releases); returns how many rewound
        rows were skipped."""
        rewound = 0
        for row in rows:
            compacted = row.get("compacted")
            if row.get("active", 1) == 0 and not compacted:
                rewound += 1
                continue
            self.message(row, iso(row.get("timestamp")), {"compacted": True} if compacted else {})
        return rewound

    def message(self, row: dict, when, flags: dict) -> None:
        role = row.get("role")
        content, readable = decode_content(row.get("content"))
        if not readable:
            self.builder.warn("some messages' structured content is not readable JSON: kept as "
                              "the text it is")
        if role == "user":
            self.builder.user(chat_content(content), when, extra=flags or None)
        elif role == "assistant":
            self.assistant(row, content, when, flags)
        elif role == "tool":
            self.tool(row, content, when)
        elif role == "system":
            self.builder.system(chat_content(content), when, extra={"kind": "system", **flags})
        else:
            self.builder.warn(f"message with unknown role {role!r} skipped")

    def assistant(self, row: dict, content, when, flags: dict) -> None:
        reasoning = as_str(row.get("reasoning_content")) or as_str(row.get("reasoning")) or None
        extra = {**flags, **{k: row[k] for k in ("finish_reason", "token_count") if row.get(k)}}
        step = self.builder.agent(chat_content(content), when, model_name=self.model,
                                  reasoning=reasoning, llm_call_count=1, extra=extra or None)
        for call in self.calls(row.get("tool_calls")):
            function = as_dict(call.get("function"))
            call_id = as_str(call.get("id")) or as_str(call.get("call_id"))
            self.builder.tool_call(step, call_id, as_str(function.get("name")) or "",
                                   json_arguments(function.get("arguments")))

    def calls(self, raw) -> list[dict]:
        if not raw:
            return []
        try:
            parsed = loads(raw) if isinstance(raw, (str, bytes)) else raw
        except ValueError:
            self.builder.warn("unreadable tool_calls JSON on an assistant message")
            return []
        return [c for c in as_list(parsed) if isinstance(c, dict)]

    def tool(self, row: dict, content, when) -> None:
        extra = tool_result_extra(content)
        call_id = as_str(row.get("tool_call_id")) or ""
        join_result(self.builder, call_id, chat_content(content), when, extra,
                    tool_name=as_str(row.get("tool_name")))


def tool_result_extra(content) -> dict | None:
    """Hermes tools answer with JSON (`{"output", "exit_code", "error"}` for the terminal): a
    non-zero exit code or an error makes the result a failure."""
    if not isinstance(content, str) or not content.startswith("{"):
        return None
    try:
        payload = loads(content)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    extra = {}
    exit_code = as_int(payload.get("exit_code"))
    if exit_code is not None:
        extra["exit_code"] = exit_code
    if payload.get("error") or (exit_code not in (None, 0)):
        extra["is_error"] = True
    return extra or None


# the archive's interface (discovery/archive.py): one session's rows as a database of their own -------------
def extract(session: Session, env) -> bytes:
    """The store's schema with only this session's rows (`session_rows`): not the other
    sessions', nor their search index, delegations or gateway routes."""
    return sqlite_extract.image(session.source, session_rows, session.locator)


def extract_signature(session: Session, env) -> str | None:
    return sqlite_extract.signature(session.source, session_rows, session.locator)


def session_rows(connection) -> list[tuple[str, str]]:
    """What `translate` reads of a session: its row, its messages and its usage per model.
    Children are sessions of their own (Hermes links no call to them), archived on their own."""
    return [("sessions", "id = ?"), ("messages", "session_id = ?"), ("session_model_usage", "session_id = ?")]
