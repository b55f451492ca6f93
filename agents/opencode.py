"""opencode: `${XDG_DATA_HOME:-~/.local/share}/opencode`.

Two stores with one object model (session -> messages -> parts):
- SQLite (1.2+): `opencode.db`, or `opencode-<channel>.db` for other release channels, or
  `$OPENCODE_DB`. One database holds every session; `Session.locator` is the session id.
  Tables `session`, `message(id, session_id, data)`, `part(id, message_id, data)`, `project`;
  `data` is the JSON object minus its ids. Columns drift between releases, so every query is
  built from the columns that exist.
- JSON files (before 1.2): `storage/session/<project>/<id>.json`, `storage/message/<session>/
  <id>.json`, `storage/part/<message>/<id>.json` (very old builds keep parts flat in
  `storage/part/`). One session file is one source.

A `task` tool call runs a sub-agent in a child session (`parent_id`). Children are embedded in
their parent's document, referenced from the spawning call's result (`state.metadata.
sessionId`), and not listed on their own: one delegated task is one trajectory, and listing it
again would count its work twice. A child whose parent is gone is listed by itself.

Each assistant message holds one model call per `step-start` .. `step-finish` pair (one in
current releases, several in older ones); each pair is one agent step, with the `step-finish`
tokens and cost. Token semantics: `tokens.input` excludes cache reads and writes, so
`prompt_tokens` = input + cache.read + cache.write. Current releases store `tokens.output`
without the reasoning tokens (`completion_tokens` = output + reasoning); older ones included
them, which shows in `tokens.total` (see `completion_tokens`).

Kilo CLI (`agents/kilo.py`) is an opencode fork with the same stores under another name: every
function here takes the `Family` it reads.
"""

from __future__ import annotations

import glob
import os
import re
import sqlite3
from collections import namedtuple

from agents import sqlite_extract, sqlite_ro
from agents.base import (Session, as_dict, as_int, as_list, as_str, epoch, home, iso, one_line,
                         open_binary, text_of)
from atif.build import image_part, metrics, text_part, TrajectoryBuilder
from atif.serialize import loads
from core import storefs

NAME = "opencode"
PREFIX = "oc"
ATIF_NAME = "opencode"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("opencode", "--session", "{id}"), "resume_prompt": ("opencode", "run", "--session", "{id}", "{prompt}"),
       "start": ("opencode", "--prompt", "{prompt}"), "start_prompt": ("opencode", "run", "{prompt}"), "checked": "1.18.33"}
VERSION = 2

MAX_DEPTH = 8           # nesting of sub-agent sessions embedded in one document


class Family(namedtuple("Family", "app db_variable agent atif_name")):
    """Where one opencode-family CLI keeps its data: `app`, the data directory's name and the
    database's; `db_variable`, the environment variable that overrides the database path;
    `agent`, our agent NAME."""
    __slots__ = ()


OPENCODE = Family("opencode", "OPENCODE_DB", NAME, ATIF_NAME)


# locations --------------------------------------------------------------------------------------
def data_dir(env, family: Family) -> str:
    base = env.get("XDG_DATA_HOME") or os.path.join(home(env), ".local", "share")
    return os.path.join(base, family.app)


def databases(env, family: Family) -> list[str]:
    """`$<APP>_DB` (absolute, or relative to the data directory; `:memory:` is no file), then
    `<app>.db` and `<app>-<channel>.db` in the data directory."""
    directory = data_dir(env, family)
    found = []
    override = env.get(family.db_variable)
    if override and override != ":memory:":
        found.append(override if os.path.isabs(override) else os.path.join(directory, override))
    pattern = re.compile(rf"{re.escape(family.app)}(-[\w.-]+)?\.db")
    try:
        names = sorted(storefs.listdir(directory))
    except OSError:
        names = []
    found += [os.path.join(directory, n) for n in names if pattern.fullmatch(n)]
    unique = list(dict.fromkeys(found))
    return [p for p in unique if storefs.isfile(p)]


def family_sources(env, family: Family):
    """Databases first, so that a session also left in the JSON tree is read from the database
    (the catalog keeps the first source of an id)."""
    yield from databases(env, family)
    storage = os.path.join(data_dir(env, family), "storage")
    yield from sorted(storefs.glob(os.path.join(glob.escape(storage), "session", "*", "*.json")))


def is_database(source: str) -> bool:
    return source.endswith(".db")


def storage_of(session_file: str) -> str:
    """`<storage>/session/<project>/<id>.json` -> `<storage>`."""
    return os.path.dirname(os.path.dirname(os.path.dirname(session_file)))


def family_dependencies(source: str) -> list[str]:
    if is_database(source):
        return sqlite_ro.fingerprint_paths(source)
    return JsonStore(storage_of(source)).dependencies(source)


# the SQLite store -------------------------------------------------------------------------------
def open_database(path: str, env) -> sqlite3.Connection:
    """A snapshot of the database (WAL applied), kept while its files are unchanged
    (`sqlite_ro.shared`): translating every session of a large store must not copy it once per
    session."""
    return sqlite_ro.shared(path, env)


class DbStore:
    """Rows of the SQLite store as the same dicts the JSON store reads. What one document reads
    is bounded (`sqlite_ro.RowBudget`); what was left out is in `take_warnings()`."""

    def __init__(self, path: str, env, db: sqlite3.Connection | None = None):
        self.path = path
        self.db = open_database(path, env) if db is None else db
        tables = ("session", "message", "part", "project")
        self.columns = {table: sqlite_ro.columns(self.db, table) for table in tables}
        if not self.columns["session"] or not self.columns["message"]:
            raise sqlite_ro.StoreError(f"{path} has no opencode session/message tables")
        self.budget = sqlite_ro.RowBudget()

    def column(self, table: str, name: str, alias: str, fallback: str = "NULL") -> str:
        return f"{alias}.{name}" if name in self.columns[table] else fallback

    SESSION_KEYS = ("id", "parent_id", "directory", "title", "version", "created", "worktree")

    def session_query(self, where: str) -> tuple[list[str], str]:
        """The SELECT fields of `SESSION_KEYS` (NULL for a column this schema lacks), and the
        rest of the query."""
        s = lambda name: self.column("session", name, "s")  # noqa: E731
        worktree, join = "NULL", ""
        if "worktree" in self.columns["project"] and "project_id" in self.columns["session"]:
            worktree, join = "p.worktree", " LEFT JOIN project p ON p.id = s.project_id"
        fields = [s("id"), s("parent_id"), s("directory"), s("title"), s("version"),
                  s("time_created"), worktree]
        return fields, f"FROM session s{join} {where}"

    def sessions(self, where: str, args: tuple) -> list[dict]:
        """Session rows for a document, within its budget."""
        fields, rest = self.session_query(where)
        return [dict(zip(self.SESSION_KEYS, row))
                for row in self.budget.select(self.db, fields, rest, args, "sessions")]

    def session(self, session_id: str) -> dict | None:
        found = self.sessions("WHERE s.id = ?", (session_id,))
        return found[0] if found else None

    def children(self, row: dict) -> list[dict]:
        if "parent_id" not in self.columns["session"]:
            return []
        return self.sessions("WHERE s.parent_id = ? AND s.id != ? ORDER BY s.time_created, s.id",
                             (row["id"], row["id"]))

    def message_order(self) -> str:
        return "m.time_created, m.id" if "time_created" in self.columns["message"] else "m.id"

    def messages(self, session_id: str) -> list[dict]:
        rows = self.budget.select(self.db, ["m.id", "m.data"], "FROM message m WHERE "
                                  f"m.session_id = ? ORDER BY {self.message_order()}",
                                  (session_id,), "messages")
        return self.objects("message", rows)

    def parts(self, session_id: str, messages: list[dict]) -> dict[str, list[dict]]:
        """The session's parts by message id, in id (= creation) order."""
        found: dict[str, list[dict]] = {}
        if not self.columns["part"]:
            return found
        rows = self.budget.select(self.db, ["p.message_id", "p.id", "p.data"],
                                  "FROM part p JOIN message m ON m.id = p.message_id "
                                  "WHERE m.session_id = ? ORDER BY p.id", (session_id,), "parts")
        parts = self.objects("part", [row[1:] for row in rows])
        for (message_id, _, _), part in zip(rows, parts):
            found.setdefault(message_id, []).append(part)
        return found

    def objects(self, kind: str, rows: list[tuple]) -> list[dict]:
        """`(id, data)` rows as the dicts of their JSON `data`, ids put back; a row whose data
        is no JSON object (damaged, cut, left out for its size, nested too deeply to parse)
        becomes `{"type": "unreadable"}`, counted in a warning."""
        found = [with_id(object_id, data) for object_id, data in rows]
        unreadable = sum(1 for item in found if item.get("type") == "unreadable")
        if unreadable:
            self.budget.warnings.append(f"{unreadable} {kind}(s) whose data is not a readable "
                                        "JSON object were skipped")
        return found

    def take_warnings(self) -> list[str]:
        return self.budget.take_warnings()

    def listing(self) -> list[dict]:
        """Every session with its first typed prompt and first model, in one query. Values are
        capped (`sqlite_ro.capped`), and the JSON of a row over the size limit is not looked
        into."""
        fields, rest = self.session_query("")
        keys, extra = self.SESSION_KEYS, []
        if self.columns["part"]:
            keys += ("first_text", "model")
            extra = [self.first_text(), self.first_model()]
        select = ", ".join([sqlite_ro.capped(field) for field in fields] + extra)
        rows = self.db.execute(f"SELECT {select} {rest}").fetchall()
        return [{"first_text": None, "model": None, **dict(zip(keys, row))} for row in rows]

    def first_text(self) -> str:
        return (f"(SELECT {json_field('pt.data', '$.text')} FROM message m "
                "JOIN part pt ON pt.message_id = m.id WHERE m.session_id = s.id "
                f"AND {within_limit('m.data')} AND {within_limit('pt.data')} "
                f"AND {json_field('m.data', '$.role')} = 'user' "
                f"AND {json_field('pt.data', '$.type')} = 'text' "
                f"AND coalesce({json_field('pt.data', '$.synthetic')}, 0) = 0 "
                f"ORDER BY {self.message_order()}, pt.id LIMIT 1)")

    def first_model(self) -> str:
        """SQL: the model fields of the session's first message that names a model, as a JSON
        array (`model_fields` reads it), so that the listing names the model as the document
        does (`first_model_name`)."""
        fields = [string_field("m.data", path) for path in MODEL_PATHS]
        named = " OR ".join(f"coalesce({field}, '') != ''" for field in (fields[0], fields[2]))
        return (f"(SELECT json_array({', '.join(fields)}) FROM message m WHERE m.session_id = s.id "
                f"AND {within_limit('m.data')} AND ({named}) ORDER BY {self.message_order()} LIMIT 1)")


MODEL_PATHS = ("$.modelID", "$.providerID", "$.model.modelID", "$.model.providerID")


def string_field(column: str, path: str) -> str:
    """SQL for a field of a JSON column that holds a string, NULL otherwise."""
    return (f"CASE WHEN json_valid({column}) THEN CASE WHEN json_type({column}, '{path}') = 'text' "
            f"THEN json_extract({column}, '{path}') END END")


def model_fields(found) -> dict:
    """The message fields `first_model` selected, shaped as the message holds them."""
    try:
        values = loads(found) if isinstance(found, str) else None
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != len(MODEL_PATHS):
        return {}
    model_id, provider, nested_id, nested_provider = values
    return {"modelID": model_id, "providerID": provider,
            "model": {"modelID": nested_id, "providerID": nested_provider}}


def within_limit(column: str) -> str:
    """SQL: the column's value is no bigger than `sqlite_ro.MAX_VALUE_BYTES`."""
    return f"{sqlite_ro.byte_length(column)} <= {sqlite_ro.MAX_VALUE_BYTES}"


def json_field(column: str, path: str) -> str:
    """SQL for a field of a JSON column, NULL where the column does not hold JSON (json_extract
    itself fails the whole query on one damaged row)."""
    return f"CASE WHEN json_valid({column}) THEN json_extract({column}, '{path}') END"


def with_id(object_id: str, data) -> dict:
    """A message or part row's JSON `data` with its id put back."""
    try:
        parsed = loads(data) if isinstance(data, (str, bytes)) else None
    except ValueError:
        parsed = None
    found = dict(parsed) if isinstance(parsed, dict) else {"type": "unreadable"}
    found["id"] = object_id
    return found


# the JSON store ---------------------------------------------------------------------------------
def read_json(path: str) -> dict | None:
    try:
        with open_binary(path) as handle:
            found = loads(handle.read())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def json_files(directory: str) -> list[str]:
    return sorted(storefs.glob(os.path.join(glob.escape(directory), "*.json")))


class JsonStore:
    """The pre-1.2 tree of JSON files."""

    def __init__(self, storage: str):
        self.storage = storage

    def take_warnings(self) -> list[str]:
        """None: the tree is read file by file (`read_json`), with no budget of rows."""
        return []

    def session_dict(self, path: str) -> dict | None:
        data = read_json(path)
        if data is None or not as_str(data.get("id")):
            return None
        project = read_json(os.path.join(self.storage, "project", f"{data.get('projectID')}.json")) or {}
        return {"id": data["id"], "parent_id": as_str(data.get("parentID")),
                "directory": as_str(data.get("directory")), "title": as_str(data.get("title")),
                "version": as_str(data.get("version")),
                "created": as_dict(data.get("time")).get("created"),
                "worktree": as_str(project.get("worktree")), "file": path}

    def children(self, row: dict) -> list[dict]:
        found = []
        for path in json_files(os.path.dirname(row["file"])):
            if path != row["file"]:
                child = self.session_dict(path)
                if child and child["parent_id"] == row["id"]:
                    found.append(child)
        return sorted(found, key=lambda c: (epoch(c["created"]) or 0, c["id"]))

    def message_files(self, session_id: str) -> list[str]:
        return (json_files(os.path.join(self.storage, "message", session_id))
                or json_files(os.path.join(self.storage, "session", "message", session_id)))

    def messages(self, session_id: str) -> list[dict]:
        found = []
        for path in self.message_files(session_id):
            data = read_json(path)
            if data is not None:
                data.setdefault("id", os.path.basename(path)[:-5])
                found.append(data)
        return sorted(found, key=lambda m: (epoch(as_dict(m.get("time")).get("created")) or 0,
                                            str(m["id"])))

    def part_files(self, session_id: str, message_id: str) -> list[str]:
        return (json_files(os.path.join(self.storage, "part", message_id))
                or json_files(os.path.join(self.storage, "session", "part", session_id, message_id)))

    def parts(self, session_id: str, messages: list[dict]) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = {m["id"]: [] for m in messages}
        for message_id in found:
            for path in self.part_files(session_id, message_id):
                data = read_json(path)
                if data is not None:
                    found[message_id].append(data)
        for path in json_files(os.path.join(self.storage, "part")):  # the oldest, flat layout
            data = read_json(path)
            if data is not None and data.get("messageID") in found:
                found[data["messageID"]].append(data)
        for items in found.values():
            items.sort(key=lambda p: str(p.get("id", "")))
        return found

    def dependencies(self, session_file: str) -> list[str]:
        """Every file whose change changes this session's document: its own file and folder
        (children appear there), and the message and part files of it and its children."""
        paths = [session_file, os.path.dirname(session_file), os.path.join(self.storage, "part")]
        session = self.session_dict(session_file)
        if session is None:
            return paths
        for sid in [session["id"]] + [c["id"] for c in self.children(session)]:
            paths.append(os.path.join(self.storage, "message", sid))
            for message_file in self.message_files(sid):
                message_id = os.path.basename(message_file)[:-5]
                paths += [message_file, os.path.join(self.storage, "part", message_id)]
                paths += self.part_files(sid, message_id)
        return paths


# scan -------------------------------------------------------------------------------------------
def family_scan(source: str, env, family: Family) -> list[Session]:
    if is_database(source):
        return scan_database(source, env, family)
    return scan_json(source, family)


def scan_database(source: str, env, family: Family) -> list[Session]:
    listing = sqlite_ro.listed(source, env, lambda db: DbStore(source, env, db).listing())
    rows = [row for row in listing if isinstance(row["id"], str) and row["id"]]
    parents = {row["id"]: row["parent_id"] for row in rows}
    return [listed(family, source, row, row["first_text"], model_name(model_fields(row["model"])), "sqlite")
            for row in rows if is_top_level(row["id"], parents)]


def is_top_level(session_id: str, parents: dict) -> bool:
    """Whether a session is listed on its own: it has no parent, or its parent is gone, or its
    ancestry loops. Otherwise the top of its ancestry embeds it."""
    seen, parent = {session_id}, parents.get(session_id)
    while parent:
        if parent not in parents or parent in seen:
            return True
        seen.add(parent)
        parent = parents[parent]
    return not parents.get(session_id)


def scan_json(source: str, family: Family) -> list[Session]:
    store = JsonStore(storage_of(source))
    row = store.session_dict(source)
    if row is None:
        raise ValueError("not an opencode session file")
    parent = row["parent_id"]
    if parent and parent != row["id"] and storefs.exists(os.path.join(os.path.dirname(source), f"{parent}.json")):
        return []
    first_text, model = None, None
    for message in store.messages(row["id"]):
        if model is None:
            model = model_name(message)
        if message.get("role") == "user" and first_text is None:
            parts = store.parts(row["id"], [message])[message["id"]]
            first_text = prompt_text(parts) or None
        if first_text is not None and model is not None:
            break
    return [listed(family, source, row, first_text, model, "json")]


def listed(family: Family, source: str, row: dict, first_text, model, kind: str) -> Session:
    return Session(agent=family.agent, native_id=row["id"], source=source,
                   started=epoch(row["created"]), cwd=as_str(row["directory"]) or as_str(row["worktree"]),
                   title=one_line(as_str(first_text) or as_str(row["title"]) or ""), model=as_str(model),
                   locator=row["id"], extra={"format": kind, "native_title": as_str(row["title"])})


def model_id(message: dict) -> str | None:
    return as_str(message.get("modelID")) or as_str(as_dict(message.get("model")).get("modelID"))


def first_model_name(messages: list[dict]) -> str | None:
    """The session's model: that of its first message naming one, as `provider/model`."""
    return next((model_name(m) for m in messages if model_name(m)), None)


def model_name(message: dict) -> str | None:
    """`provider/model`, the way opencode names models (`opencode run -m provider/model`)."""
    model = model_id(message)
    provider = (as_str(message.get("providerID"))
                or as_str(as_dict(message.get("model")).get("providerID")))
    return f"{provider}/{model}" if model and provider else model


def prompt_text(parts: list[dict]) -> str:
    return "\n".join(p["text"] for p in parts if p.get("type") == "text"
                     and isinstance(p.get("text"), str) and not p.get("synthetic"))


# translation ------------------------------------------------------------------------------------
def family_translate(session: Session, env, family: Family) -> dict:
    if is_database(session.source):
        store = DbStore(session.source, env)
        row = store.session(session.locator or session.native_id)
    else:
        store = JsonStore(storage_of(session.source))
        row = store.session_dict(session.source)
    if row is None:
        raise ValueError(f"session {session.native_id} is no longer in {session.source}")
    return SessionTranslator(store, family).document(row)


class SessionTranslator:
    def __init__(self, store, family: Family, depth: int = 0):
        self.store = store
        self.family = family
        self.depth = depth

    def document(self, row: dict) -> dict:
        builder = TrajectoryBuilder(self.family.atif_name, version=as_str(row["version"]),
                                    session_id=as_str(row["id"]))
        if as_str(row["title"]):
            builder.extra["native_title"] = row["title"]
        messages = self.store.messages(row["id"])
        parts = self.store.parts(row["id"], messages)
        children = {child["id"]: {**child, "referenced": False} for child in self.store.children(row)}
        for warning in self.store.take_warnings():
            builder.warn(warning)
        builder.model_name = first_model_name(messages)
        for message in messages:
            MessageTranslator(builder, message, parts.get(message["id"], []), children).translate()
        self.embed_children(builder, children)
        return builder.build()

    def embed_children(self, builder: TrajectoryBuilder, children: dict[str, dict]) -> None:
        for child_id, child in children.items():
            if not child["referenced"]:
                step = builder.system(f"sub-agent session {child_id} ({child['title'] or 'untitled'}): "
                                      "no task call of this session references it",
                                      extra={"kind": "subagent"})
                builder.observe(step, None, subagents=[child_ref(child_id)])
            if self.depth >= MAX_DEPTH:
                builder.warn(f"sub-agent sessions nested deeper than {MAX_DEPTH} levels "
                             "were not embedded")
                stub = TrajectoryBuilder(self.family.atif_name, session_id=child_id)
                stub.system("(not embedded: nested too deep)")
                builder.embed(stub.build(), child_id)
                continue
            subdoc = SessionTranslator(self.store, self.family, self.depth + 1).document(child)
            builder.embed(subdoc, child_id)


def child_ref(child_id: str) -> dict:
    return {"trajectory_id": child_id, "session_id": child_id}


class MessageTranslator:
    """One native message: a user message becomes a user step (and system steps for what the
    harness added to it); an assistant message one agent step per model call."""

    def __init__(self, builder: TrajectoryBuilder, message: dict, parts: list[dict], children: dict):
        self.builder = builder
        self.message = message
        self.parts = parts
        self.children = children
        self.created = iso(as_dict(message.get("time")).get("created"))

    def translate(self) -> None:
        role = self.message.get("role")
        if role == "user":
            self.user()
        elif role == "assistant":
            self.assistant()
        else:
            self.builder.warn(f"messages with role {role!r} were skipped")

    # user ----------------------------------------------------------------------------------------
    def user(self) -> None:
        content = []
        for part in self.parts:
            kind = part.get("type")
            if kind == "text" and not part.get("synthetic"):
                content.append(text_part(text_of(part.get("text"))))
            elif kind == "file":
                content.append(file_content(part))
            elif kind == "text":
                self.builder.system(text_of(part.get("text")), self.created, extra={"kind": "synthetic"})
            else:
                self.side_part(part, None)
        if content:
            self.builder.user(flatten(content), self.created)

    # assistant -----------------------------------------------------------------------------------
    def assistant(self) -> None:
        segments = model_calls(self.parts)
        if not any(p.get("type") == "step-finish" for p in self.parts):
            segments[-1].append({"type": "step-finish", "tokens": self.message.get("tokens"),
                                 "cost": self.message.get("cost"), "from_message": True})
        for index, segment in enumerate(segments):
            self.model_call(segment, last=index == len(segments) - 1)

    def model_call(self, parts: list[dict], last: bool) -> None:
        texts, reasoning, finish, side = [], [], {}, []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                texts.append(text_part(text_of(part.get("text"))))
            elif kind == "file":
                texts.append(file_content(part))
            elif kind == "reasoning" and text_of(part.get("text")):
                reasoning.append(text_of(part["text"]))
            elif kind == "step-finish":
                finish = part
            elif kind not in ("tool", "step-start"):
                side.append(part)
        stamp = first_time(parts) or self.created
        step = self.builder.agent(flatten(texts), stamp, model_name=model_name(self.message),
                                  reasoning="\n\n".join(reasoning) or None,
                                  metrics=step_metrics(finish), llm_call_count=1,
                                  extra=self.step_extra(last) or None)
        for part in parts:
            if part.get("type") == "tool":
                self.tool(step, part)
        for part in side:
            self.side_part(part, step)

    def step_extra(self, last: bool) -> dict:
        extra = {}
        if self.message.get("summary") is True:
            extra["kind"] = "compaction_summary"
        error = as_dict(self.message.get("error"))
        if last and error:
            extra["error"] = {"name": error.get("name"),
                              "message": as_str(as_dict(error.get("data")).get("message"))}
        return extra

    def tool(self, step, part: dict) -> None:
        state = as_dict(part.get("state"))
        call_id = self.builder.tool_call(step, as_str(part.get("callID")),
                                         as_str(part.get("tool")) or "unknown", state.get("input"))
        status = state.get("status")
        if status not in ("completed", "success", "error"):
            self.builder.warn("some tool calls have no result (still pending or running when "
                              "the session was recorded)")
            return
        refs = self.subagent_refs(part, state)
        self.builder.tool_result(call_id, tool_content(state), tool_extra(state), subagents=refs)

    def subagent_refs(self, part: dict, state: dict) -> list[dict] | None:
        metadata = as_dict(state.get("metadata"))
        child = as_str(metadata.get("sessionId")) or as_str(metadata.get("sessionID"))
        if not child:
            match = re.search(r"\b(?:task_id|session_id): (ses_\w+)", text_of(state.get("output")))
            child = match.group(1) if match else None
        if child in self.children:
            self.children[child]["referenced"] = True
            return [child_ref(child)]
        return None

    def side_part(self, part: dict, step) -> None:
        """Parts that are neither text nor tool: a compaction, or an @agent mention, becomes a
        system step; patches and API retries are noted on the step they belong to."""
        kind = part.get("type")
        if kind == "compaction":
            self.builder.system("context compacted", self.created,
                                extra={"kind": "compaction", "auto": part.get("auto"),
                                       "context_management": COMPACTION})
        elif kind in ("agent", "subtask"):
            name = as_str(part.get("name")) or as_str(part.get("agent")) or "agent"
            request = as_str(part.get("prompt")) or as_str(part.get("description")) or ""
            self.builder.system(f"@{name} {request}".strip(), self.created, extra={"kind": kind})
        elif step is not None and kind == "patch":
            note(step, "patched_files", as_list(part.get("files")))
        elif step is not None and kind == "retry":
            error = as_dict(as_dict(part.get("error")).get("data"))
            retries = (step.extra or {}).get("retries", [])
            note(step, "retries", retries + [as_str(error.get("message")) or "retry"])


COMPACTION = {"type": "compaction", "boundary": "replace"}


def note(step, key: str, value) -> None:
    step.extra = {**(step.extra or {}), key: value}


def model_calls(parts: list[dict]) -> list[list[dict]]:
    """The parts of an assistant message grouped by model call: a `step-start` opens one, a
    `step-finish` closes it. Parts outside any call (a `patch` after the finish) join the call
    before them."""
    segments: list[list[dict]] = [[]]
    for part in parts:
        kind = part.get("type")
        if kind == "step-start" and any(p.get("type") != "step-start" for p in segments[-1]):
            segments.append([])
        segments[-1].append(part)
        if kind == "step-finish":
            segments.append([])
    calls: list[list[dict]] = []
    for segment in segments:
        opens = any(p.get("type") in ("step-start", "step-finish", "text", "reasoning", "tool")
                    for p in segment)
        if calls and not opens:
            calls[-1].extend(segment)
        elif segment:
            calls.append(segment)
    return calls or [[]]


def step_metrics(finish: dict) -> dict | None:
    tokens = as_dict(finish.get("tokens"))
    cost = finish.get("cost")
    cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    if not tokens:
        return metrics(cost=cost)
    cache = as_dict(tokens.get("cache"))
    read, write = as_int(cache.get("read")), as_int(cache.get("write")) or 0
    prompt = (as_int(tokens.get("input")) or 0) + (read or 0) + write
    reasoning = as_int(tokens.get("reasoning")) or 0
    extra = {k: v for k, v in (("cache_write_tokens", write), ("reasoning_tokens", reasoning)) if v}
    return metrics(prompt, completion_tokens(tokens), read, cost, extra)


def completion_tokens(tokens: dict) -> int:
    """Output plus reasoning, unless `total` shows the output already counted the reasoning
    (releases before the AI SDK v6 upgrade)."""
    output, reasoning = as_int(tokens.get("output")) or 0, as_int(tokens.get("reasoning")) or 0
    cache = as_dict(tokens.get("cache"))
    without = ((as_int(tokens.get("input")) or 0) + output + (as_int(cache.get("read")) or 0)
               + (as_int(cache.get("write")) or 0))
    if reasoning and as_int(tokens.get("total")) == without:
        return output
    return output + reasoning


def tool_content(state: dict):
    if state.get("status") == "error":
        return text_of(state.get("error")) or text_of(state.get("output")) or "error"
    output = text_of(state.get("output"))
    images = [file_content(a) for a in as_list(state.get("attachments")) if isinstance(a, dict)]
    return [text_part(output), *images] if images else output


def tool_extra(state: dict) -> dict:
    extra = {}
    if state.get("status") == "error":
        extra["is_error"] = True
    exit_code = as_int(as_dict(state.get("metadata")).get("exit"))
    if exit_code is not None:
        extra["exit_code"] = exit_code
    if as_str(state.get("title")):
        extra["title"] = state["title"]
    return extra


def file_content(part: dict) -> dict:
    """An attached file: images as image parts (inline `data:` URLs become a hash, see
    `image_part`), anything else as a one-line note."""
    mime, url = as_str(part.get("mime")), as_str(part.get("url")) or ""
    name = as_str(part.get("filename")) or url.rsplit("/", 1)[-1] or "file"
    if mime and mime.startswith("image/"):
        if url.startswith("data:"):
            return image_part(mime, url.partition(",")[2], label=name)
        return image_part(mime, url=url or None, data=name, label=name)
    return text_part(f"[file: {name} ({mime or 'unknown type'})]")


def flatten(content: list[dict]):
    """A plain string when every part is text (the common case), else the parts."""
    if all(p.get("type") == "text" for p in content):
        return "\n".join(p["text"] for p in content if p["text"])
    return content


def first_time(parts: list[dict]) -> str | None:
    for part in parts:
        start = as_dict(part.get("time")).get("start")
        if start is not None:
            return iso(start)
    return None


# the agent interface ----------------------------------------------------------------------------
def sources(env):
    return family_sources(env, OPENCODE)


def dependencies(source: str, env) -> list[str]:
    return family_dependencies(source)


def scan(source: str, env) -> list[Session]:
    return family_scan(source, env, OPENCODE)


def translate(session: Session, env) -> dict:
    return family_translate(session, env, OPENCODE)


# the archive's interface (discovery/archive.py): one session's rows as a database of their own -------------
def extract(session: Session, env) -> bytes:
    """The store's schema with only this session's rows (`session_rows`). Nothing else of the
    store (accounts, credentials, other sessions) goes in."""
    return sqlite_extract.image(session.source, session_rows, session.locator or session.native_id)


def extract_signature(session: Session, env) -> str | None:
    """The digest of the session's rows (`sqlite_extract.signature`); None for the JSON tree,
    whose files are archived."""
    if not is_database(session.source):
        return None
    return sqlite_extract.signature(session.source, session_rows, session.locator or session.native_id)


def session_rows(store: sqlite3.Connection) -> list[tuple[str, str]]:
    """What `translate` reads of a session: its session row and its sub-agent sessions' (which
    it embeds), their messages and parts, and their project (the worktree)."""
    tree = sqlite_extract.tree(store, "session", "parent_id")
    rows = [("session", f"id IN {tree}"), ("message", f"session_id IN {tree}")]
    if sqlite_ro.columns(store, "part"):
        rows.append(("part", f"message_id IN (SELECT id FROM message WHERE session_id IN {tree})"))
    if "id" in sqlite_ro.columns(store, "project") and "project_id" in sqlite_ro.columns(store, "session"):
        rows.append(("project", f"id IN (SELECT project_id FROM session WHERE id IN {tree})"))
    return rows
