#!/usr/bin/env python3
"""A heavy user's $HOME for the benchmarks, built from the real sample stores of every agent.

    python bench/make_corpus.py [--small] [--sessions N] [--seed S] [--out DIR]

Every session of the corpus is a copy of a real session (the live stores the agents' current
releases wrote, `tests/fixtures/samples/live/`, and the other samples for stores without a live
one) with fresh ids, a working directory in one of many projects, and its timestamps moved to a
date of the last two years. Sessions are grown to a long-tail size distribution by repeating
their turns (prompt, tool calls, results, answer) with fresh ids, so tool calls and results still
join, and parent chains (`parentUuid`, `parentId`) still link every turn to the previous one.

Every kind of store is written: JSONL files (Claude Code, Codex, Copilot CLI, Gemini CLI, Qwen
Code, pi, Kimi, Cursor transcripts, Factory Droid, Goose legacy), JSON trees (Cline, Roo Code,
Amp, mini-swe-agent, opencode's JSON storage), SQLite databases (opencode, Kilo, Hermes, Goose,
Crush, Cursor's store.db, with Codex's and Copilot's and Cline's own indexes beside their files),
Codex `.jsonl.zst` archives, and Aider's per-project Markdown history. The corpus is ours: its
SQLite stores are written with the stdlib sqlite3 (journal mode DELETE, so that a reader leaves no
-wal/-shm beside them). Three stores have no real sample (Crush, Goose's database, Cursor's
store.db): their template is built by the store builders of the test suite, which follow the
agents' own migrations and layouts.

The same seed gives the same corpus, byte for byte. `corpus.json` in the output folder lists
every session (agent, project, native size) and the largest one of each agent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "tests", "fixtures", "samples")
LIVE = os.path.join(SAMPLES, "live")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc).timestamp()  # the corpus' "today"
SPREAD_DAYS = 730
MAIN_SHARE = 0.4  # of the sessions, in the project the user works in most (2,000 of 5,000)
WORDS = ("parser cache flaky retry migration tokenizer deadlock rollout webhook schema pagination "
         "checksum bisect profiler allocator scheduler fixture benchmark lockfile sandbox vendoring "
         "quota backoff cursor encoder manifest shard replica linter bootstrap telemetry").split()
ID_KEYS = {"id", "uuid", "parentUuid", "leafUuid", "sessionId", "session_id", "sessionID", "parentId",
           "parentID", "parent_id", "parent_session_id", "parentSessionId", "messageId", "messageID",
           "message_id", "callID", "call_id", "toolCallId", "tool_call_id", "tool_use_id", "toolUseId",
           "promptId", "requestId", "agentId", "agent_id", "threadId", "thread_id", "conversation_id",
           "task_id", "taskId", "turn_id", "turnId", "itemId", "item_id", "responseId", "response_id"}


# templates ------------------------------------------------------------------------------------------
@dataclass
class Unit:
    """One session of a template store (with its sub-agents and side files)."""
    files: list[str]                     # paths relative to the template root
    grow: str | None = None              # the JSONL file grown by repeating its turns
    rows: dict = field(default_factory=dict)  # db path -> {table: [rowid, ...]}


@dataclass
class Template:
    agent: str
    root: str                            # laid out like $HOME (Aider, Crush: `projects/<name>/`)
    units: list[Unit]
    cwds: list[str]                      # working directories the sessions name
    weight: float                        # share of the corpus' sessions
    grow_tables: tuple = ()              # tables whose rows of a session repeat to grow it
    dbs: dict = field(default_factory=dict)   # db path -> sessions table
    big: bool = False                    # may hold the long-tail giants
    zst_share: float = 0.0               # share of the copies written as .jsonl.zst archives
    db_units: list | None = None         # found by Writer._db_units


def live(name: str) -> str:
    return os.path.join(LIVE, name)


def files_under(root: str, *parts: str) -> list[str]:
    base = os.path.join(root, *parts)
    found = []
    for folder, _, names in os.walk(base):
        found += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return sorted(found)


def per_file(root: str, pattern: str, side=lambda rel: []) -> list[Unit]:
    """One unit per file matching `pattern` (a regex on the relative path)."""
    return [Unit([rel] + side(rel), grow=rel if rel.endswith(".jsonl") else None)
            for rel in files_under(root) if re.search(pattern, rel)]


def per_folder(root: str, pattern: str, main: str | None = None) -> list[Unit]:
    """One unit per folder matching `pattern`, all its files (`main` grows)."""
    units = {}
    for rel in files_under(root):
        found = re.match(pattern, rel)
        if found:
            units.setdefault(found.group(0), []).append(rel)
    return [Unit(files, grow=next((f for f in files if main and f.endswith(main)), None))
            for _, files in sorted(units.items())]


def claude_template() -> Template:
    home = live("claude-2.1.332")
    return Template("claude", home, per_file(home, r"\.jsonl$"),
                    ["/tmp/agents/proj-claude", "/tmp/agents/proj-claude-other"], 30, big=True)


def templates(scratch: str) -> list[Template]:
    found = [claude_template()]
    showcase = os.path.join(SAMPLES, "claude", "claude-code-log", "minimal_showcase")
    found.append(Template("claude", _rooted(scratch, "showcase", showcase,
                                            ".claude/projects/-workspace-example-app"),
                          [Unit(files_under(os.path.join(scratch, "showcase"), ".claude"))],
                          ["/workspace/example-app"], 1))
    found.append(codex_template(scratch))
    home = _snapshot(scratch, live("copilot-1.0.102"), ".copilot/session-store.db")
    found.append(Template("copilot", home, per_folder(home, r".copilot/session-state/[0-9a-f-]{36}/", "events.jsonl"),
                          ["/tmp/agents/proj-copilot", "/tmp/agents/proj-copilot-other"], 6, big=True,
                          dbs={".copilot/session-store.db": "sessions"}))
    home = live("gemini-0.61.0")
    found.append(Template("gemini", home, per_file(home, r"chats/.*\.jsonl$", gemini_side),
                          ["/tmp/agents/proj-gemini", "/tmp/agents/proj-gemini-other"], 5))
    home = live("qwen-0.24.4")
    found.append(Template("qwen", home, per_file(home, r"chats/.*\.jsonl$"),
                          ["/tmp/agents/proj-qwen", "/tmp/agents/proj-qwen-other"], 3))
    home = live("pi-0.73.1")
    found.append(Template("pi", home, per_file(home, r"sessions/.*\.jsonl$"),
                          ["/tmp/agents/proj-pi", "/tmp/agents/proj-pi-other"], 3))
    home = live("kimi-cli-1.52.0")
    found.append(Template("kimi", home, [Unit(u.files + [".kimi/kimi.json"], u.grow) for u in
                                         per_folder(home, r".kimi/sessions/\w+/[0-9a-f-]{36}/", "wire.jsonl")],
                          ["/tmp/agents/proj-kimi", "/tmp/agents/proj-kimi-other"], 3))
    home = _snapshot(scratch, live("cline-3.0.65"), ".cline/data/db/sessions.db")
    found.append(Template("cline", home, per_folder(home, r".cline/data/sessions/\w+/"),
                          ["/tmp/agents/proj-cline", "/tmp/agents/proj-cline-other"], 3,
                          dbs={".cline/data/db/sessions.db": "sessions"}))
    home = live("mini-swe-agent-2.4.6")
    found.append(Template("mswea", home, per_file(home, r"trajectories/.*\.traj\.json$"),
                          ["/tmp/agents/proj-mswea", "/tmp/agents/proj-mswea-other"], 1))
    home = live("aider-0.86.2")
    found.append(Template("aider", home, per_folder(home, r"projects/[\w-]+/"),
                          ["/tmp/agents/proj-aider", "/tmp/agents/proj-aider-other"], 1))
    for name, app, weight in (("opencode-1.18.33", "opencode", 8), ("kilo-7.7.7", "kilo", 2)):
        home = live(name)
        db = f".local/share/{app}/{app}.db"
        found.append(Template(app, _snapshot(scratch, home, db), [], [f"/tmp/agents/proj-{app}",
                              f"/tmp/agents/proj-{app}-other"], weight, grow_tables=("message", "part"),
                              dbs={db: "session"}, big=app == "opencode"))
    home = live("hermes-agent-0.19.0")
    found.append(Template("hermes", _snapshot(scratch, home, ".hermes/state.db"), [],
                          ["/tmp/agents/proj-hermes", "/tmp/agents/proj-hermes-other"], 2,
                          grow_tables=("messages",), dbs={".hermes/state.db": "sessions"}))
    found += built_templates(scratch)
    found += sample_templates(scratch)
    return found


def gemini_side(rel: str) -> list[str]:
    project = rel.split("/chats/")[0]
    return [f"{project}/.project_root", ".gemini/projects.json"]


def codex_template(scratch: str) -> Template:
    home = _snapshot(scratch, live("codex-0.171.0"), ".codex/state_5.sqlite")
    return Template("codex", home, per_file(home, r"sessions/.*\.jsonl$"),
                    ["/tmp/agents/proj-codex", "/tmp/agents/proj-codex-other"], 20, big=True,
                    dbs={".codex/state_5.sqlite": "threads"}, zst_share=0.15)


def _rooted(scratch: str, name: str, source: str, target: str) -> str:
    root = os.path.join(scratch, name)
    shutil.copytree(source, os.path.join(root, target), dirs_exist_ok=True)
    return root


def _snapshot(scratch: str, home: str, db: str) -> str:
    """A copy of a live home whose database has its WAL applied. Every template database is
    opened in such a copy: opening the fixture itself would checkpoint its WAL away."""
    root = os.path.join(scratch, os.path.basename(home))
    if not os.path.isdir(root):
        shutil.copytree(home, root)
    path = os.path.join(root, db)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    return root


def built_templates(scratch: str) -> list[Template]:
    """Stores without a real sample, built by the test suite's store builders."""
    import test_agent_crush
    import test_agent_cursor
    import test_agent_goose

    started = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=5)
    goose_root = os.path.join(scratch, "goose")
    test_agent_goose.build_database(os.path.join(goose_root, ".local/share/goose/sessions"))
    crush_root = os.path.join(scratch, "crush")
    test_agent_crush.build_database(os.path.join(crush_root, "projects", "proj-crush"))
    cursor_root = os.path.join(scratch, "cursor")
    cwd = "/tmp/agents/proj-cursor"
    test_agent_cursor.build_store(cursor_root, cwd, "a1b2c3d4-e5f6-7890-abcd-ef1234567890",
                                  test_agent_cursor.conversation("run ls command", cwd))
    for folder, _, names in os.walk(cursor_root):  # left in WAL mode by the builder
        for name in names:
            if name == "store.db":
                connection = sqlite3.connect(os.path.join(folder, name))
                connection.execute("PRAGMA journal_mode=DELETE")
                connection.close()
    for path in (os.path.join(goose_root, ".local/share/goose/sessions/sessions.db"),
                 os.path.join(crush_root, "projects/proj-crush/.crush/crush.db")):
        pin_build_times(path, started)
    crush_cwds = [os.path.join(crush_root, "projects", "proj-crush")]
    return [
        Template("goose", goose_root, [], ["/work/proj-goose", "/work/proj-goose-other"], 2,
                 grow_tables=("messages",), dbs={".local/share/goose/sessions/sessions.db": "sessions"}),
        Template("crush", crush_root, [], crush_cwds, 1, grow_tables=("messages",),
                 dbs={"projects/proj-crush/.crush/crush.db": "sessions"}),
        Template("cursor", cursor_root, [Unit(files_under(cursor_root, ".cursor"))], [cwd], 1),
    ]


def pin_build_times(path: str, started: datetime) -> None:
    """Times the builders' schemas default to the build's (CURRENT_TIMESTAMP, unixepoch()) set
    to a fixed one, so that the corpus is the same whenever it is built."""
    fixed = datetime(2026, 1, 1, 12, tzinfo=timezone.utc)
    connection = sqlite3.connect(path)
    triggers = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    for name, _ in triggers:  # an update trigger would stamp the time again
        connection.execute(f'DROP TRIGGER "{name}"')
    for table in db_tables(connection):
        for name in columns(connection, table):
            column = f'"{table}"."{name}"'
            connection.execute(f"UPDATE \"{table}\" SET \"{name}\" = ? WHERE typeof({column}) = 'text' "
                               f"AND {column} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' AND {column} >= ?",
                               (fixed.strftime("%Y-%m-%d %H:%M:%S"), started.strftime("%Y-%m-%d")))
            for scale in (1, 1000):
                connection.execute(f"UPDATE \"{table}\" SET \"{name}\" = ? WHERE typeof({column}) = 'integer' "
                                   f"AND {column} BETWEEN ? AND ?", (int(fixed.timestamp()) * scale,
                                   int(started.timestamp()) * scale, int(started.timestamp() + 86400) * scale))
    for _, sql in triggers:
        connection.execute(sql)
    connection.commit()
    connection.close()


def sample_templates(scratch: str) -> list[Template]:
    """Stores with only small sample files: a few sessions each, so that every translator runs."""
    def one(agent, source, cwds, weight=0.5):
        return Template(agent, source, [Unit(files_under(source, ""), None)], cwds, weight)

    found = []
    for agent, source, target, cwds in (
            ("amp", "amp/cass/threads", ".local/share/amp/threads", []),
            ("droid", "droid/agent-sessions/session_store_large.jsonl", ".factory/sessions/-tmp-large/droid_large.jsonl", ["/tmp/large"]),
            ("cursor", "cursor/agent-sessions/projects/-tmp-proj/agent-transcripts/test-session.jsonl",
             ".cursor/projects/-tmp-proj/agent-transcripts/test-session.jsonl", []),
            ("goose", "goose/deja-vu/sessions/20250724_1.jsonl", ".local/share/goose/sessions/20250724_1.jsonl", []),
            ("cline", "cline/cass/tasks/task1", ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/task1", []),
            ("roo", "cline/deja-vu/roo/tasks/1767225700000",
             ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/1767225700000", []),
            ("opencode", "opencode/agent-sessions/storage_v2", ".local/share/opencode/storage", [])):
        root = os.path.join(scratch, f"sample-{agent}-{len(found)}")
        path = os.path.join(SAMPLES, source)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(root, target))
        else:
            os.makedirs(os.path.dirname(os.path.join(root, target)), exist_ok=True)
            shutil.copy(path, os.path.join(root, target))
        found.append(one(agent, root, cwds))
    return found


# ids, paths and times: one pass of one regex over the text -------------------------------------------
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"
DASHED = r"\d{4}-\d\d-\d\dT\d\d-\d\d(?:-\d\d(?:-\d{3}Z)?)?"
EPOCH = r"(?<![\w.])1[6-9]\d{8}(?:\d{3})?(?:\.\d+)?(?![\w])"


def slug(path: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", path)


class Mapping:
    """How one copy of a template rewrites text: its ids (shape-preserved, fresh per copy and per
    repetition), its working directories, home, and times."""

    def __init__(self, ids: list[str], cwds: list[str], new_cwd: str, home: str, shift: float,
                 key: str, words: str, fixed: dict | None = None):
        self.shift = shift
        self.words = words
        order = {old: rank for rank, old in enumerate(sorted(ids))}
        self.ids = {old: new_id(old, key, order[old]) for old in ids}
        self.ids.update(fixed or {})  # ids a repetition shares with the copy (its session's)
        for old in [i for i in ids if re.fullmatch(UUID, i)]:
            self.ids.setdefault(old[:8], self.ids[old][:8])  # Gemini names files by an id's head
        literals = {}
        for old in cwds:
            literals[old] = new_cwd
            literals[slug(old)] = slug(new_cwd)
            if os.path.basename(old).startswith("proj-"):
                literals[os.path.basename(old)] = os.path.basename(new_cwd)
        literals.update({old: new for old, new in self.ids.items() if "-" in old and not re.fullmatch(UUID, old)})
        self.literals = literals
        alternatives = [rf"(?P<home>/tmp/agents/home-[\w.-]+)"]
        if literals:
            listed = "|".join(re.escape(x) for x in sorted(literals, key=len, reverse=True))
            alternatives.append(rf"(?P<lit>(?<![\w$])(?:{listed})(?![\w$]))")
        alternatives += [rf"(?P<uuid>{UUID})", rf"(?P<iso>{ISO})", rf"(?P<dashed>{DASHED})",
                         r"(?P<date>\d{4}/\d\d/\d\d)", rf"(?P<epoch>{EPOCH})", r"(?P<prompt>SCENARIO(?= ))",
                         r"(?P<tok>[A-Za-z0-9][\w$]*)"]
        self.pattern = re.compile("|".join(alternatives))
        self.home = home

    def text(self, text: str) -> str:
        return self.pattern.sub(self._replace, text)

    def _replace(self, match: re.Match) -> str:
        kind, found = match.lastgroup, match.group()
        if kind == "tok" or kind == "uuid":
            return self.ids.get(found, found)
        if kind == "lit":
            return self.literals[found]
        if kind == "iso":
            return shift_iso(found, self.shift)
        if kind == "epoch":
            return shift_epoch(found, self.shift)
        if kind == "dashed":
            return shift_dashed(found, self.shift)
        if kind == "date":
            moment = datetime.strptime(found, "%Y/%m/%d") + timedelta(seconds=self.shift)
            return moment.strftime("%Y/%m/%d")
        if kind == "home":
            return self.home
        return f"SCENARIO {self.words}"

    def value(self, value):
        """A database value: text rewritten, epoch numbers shifted, the rest as it is."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if 1.6e9 <= value < 2e9:
                return type(value)(value + self.shift)
            if 1.6e12 <= value < 2e12:
                return type(value)(value + self.shift * 1000)
        return value


def new_id(old: str, key: str, rank: int) -> str:
    """A fresh id shaped like `old`: same length, prefix (`toolu_`, `ses_`) and kinds of
    characters. Long ids keep their sort order (opencode orders parts by id): their body starts
    with the copy's key and the id's rank among the template's ids."""
    digest = hashlib.sha256(f"{key}:{old}".encode()).digest()
    stream = (digest * (len(old) // 32 + 2))
    prefix = re.match(r"[a-z]+_", old)
    start = prefix.end() if prefix else 0
    body = old[start:]
    is_hex = re.fullmatch(r"[0-9a-f-]+", body) is not None
    out = []
    order = ""
    if not is_hex and len(body) >= 20:
        order = (hashlib.sha256(key.encode()).hexdigest()[:8] + f"{rank:04x}")
    for i, char in enumerate(body):
        byte = stream[i]
        if i < len(order):
            out.append(order[i])
        elif char in "-_$.:/ ":
            out.append(char)
        elif char.isdigit():
            out.append(str(byte % 10))
        elif is_hex:
            out.append("0123456789abcdef"[byte % 16])
        elif char.islower():
            out.append(chr(97 + byte % 26))
        elif char.isupper():
            out.append(chr(65 + byte % 26))
        else:
            out.append(char)
    return old[:start] + "".join(out)


def shift_iso(text: str, shift: float) -> str:
    found = re.match(r"(\d{4}-\d\d-\d\d)([T ])(\d\d:\d\d:\d\d)(\.\d+)?(.*)$", text)
    moment = datetime.strptime(f"{found[1]} {found[3]}", "%Y-%m-%d %H:%M:%S")
    fraction = found[4] or ""
    micros = int((fraction[1:] + "000000")[:6]) if fraction else 0
    moment = moment + timedelta(seconds=shift, microseconds=micros)
    head = moment.strftime("%Y-%m-%d") + found[2] + moment.strftime("%H:%M:%S")
    if fraction:
        head += "." + f"{moment.microsecond:06d}"[: len(fraction) - 1].ljust(len(fraction) - 1, "0")
    return head + found[5]


def shift_dashed(text: str, shift: float) -> str:
    parts = text.split("T")
    pieces = parts[1].split("-")
    clock = ":".join((pieces + ["00", "00"])[:3])
    moment = datetime.strptime(f"{parts[0]} {clock}", "%Y-%m-%d %H:%M:%S") + timedelta(seconds=shift)
    out = moment.strftime("%Y-%m-%dT%H-%M")
    if len(pieces) >= 3:
        out += moment.strftime("-%S")
    if len(pieces) >= 4:
        out += "-" + pieces[3]
    return out


def shift_epoch(text: str, shift: float) -> str:
    whole, _, fraction = text.partition(".")
    value = int(whole) + int(shift * (1000 if len(whole) == 13 else 1))
    return f"{value}.{fraction}" if fraction else str(value)


def epochs_in(text: str) -> list[float]:
    """Times (epoch seconds) a text holds, to anchor a template's copies in time."""
    found = []
    for match in re.finditer(ISO, text):
        try:
            found.append(datetime.fromisoformat(match.group().replace("Z", "+00:00").replace(" ", "T"))
                         .replace(tzinfo=timezone.utc).timestamp())
        except ValueError:
            pass
    for match in re.finditer(EPOCH, text):
        value = float(match.group())
        found.append(value / 1000 if value > 1e11 else value)
    return found


def collect_ids(value, into: set) -> None:
    """The ids of a parsed JSON value: string values of id-like keys, and ids by shape."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ID_KEYS and isinstance(item, str) and is_id(item):
                into.add(item)
            else:
                collect_ids(item, into)
    elif isinstance(value, list):
        for item in value:
            collect_ids(item, into)
    elif isinstance(value, str):
        ids_by_shape(value, into)


def is_id(text: str) -> bool:
    return 2 <= len(text) <= 80 and re.fullmatch(r"[\w$.:-]+", text) is not None and not text.isalpha() \
        and re.fullmatch(r"\d+", text) is None and re.fullmatch(ISO, text) is None


SHAPES = re.compile(rf"{UUID}|\b[a-z]{{2,8}}_[A-Za-z0-9]*\d[A-Za-z0-9]{{6,}}\b|\b\d{{13}}_[a-z0-9]{{3,}}\b|"
                    r"\b[0-9a-f]{32}\b|\b[0-9a-f]{64}\b")


def ids_by_shape(text: str, into: set) -> None:
    into.update(SHAPES.findall(text))


def text_ids(text: str, into: set) -> None:
    ids_by_shape(text, into)
    for line in text.splitlines():
        line = line.strip()
        if line[:1] in "{[":
            try:
                collect_ids(json.loads(line), into)
            except ValueError:
                pass
    if text.lstrip()[:1] in "{[":
        try:
            collect_ids(json.loads(text), into)
        except ValueError:
            pass


# databases ------------------------------------------------------------------------------------------
def db_tables(connection) -> list[str]:
    """Ordinary tables (no virtual tables or their shadows, no sqlite_ internals)."""
    rows = connection.execute("SELECT name, sql FROM sqlite_master WHERE type='table'").fetchall()
    virtual = [name for name, sql in rows if sql and sql.upper().startswith("CREATE VIRTUAL")]
    return [name for name, _ in rows if not name.startswith("sqlite_") and name not in virtual
            and not any(name.startswith(v + "_") for v in virtual)]


def db_units(path: str, sessions_table: str) -> list[dict]:
    """For each top-level session of a database: {table: [rowid, ...]} of every row that names it
    or one of its sub-agents' sessions (found by following ids until nothing new turns up)."""
    connection = sqlite3.connect(path)
    tables = db_tables(connection)
    texts = {t: [(rowid, " ".join(str(v) for v in values if isinstance(v, str)))
                 for rowid, *values in connection.execute(f'SELECT rowid, * FROM "{t}"')] for t in tables}
    id_column = "session_id" if "session_id" in columns(connection, sessions_table) and \
        "id" not in columns(connection, sessions_table) else "id"
    sessions = [row[0] for row in connection.execute(f'SELECT "{id_column}" FROM "{sessions_table}"')]
    connection.close()
    units, claimed = [], set()
    for session_id in sessions:
        if session_id in claimed:
            continue
        wanted, rows = {session_id}, {}
        while True:
            rows = {t: [rowid for rowid, text in texts[t] if any(w in text for w in wanted)] for t in tables}
            more = {sid for sid in sessions if sid not in wanted and any(
                sid in text for rowid, text in texts[sessions_table] if rowid in rows[sessions_table])}
            if not more:
                break
            wanted |= more
        claimed |= wanted
        units.append({t: r for t, r in rows.items() if r})
    return units


def columns(connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]


def auto_key(connection, table: str) -> str | None:
    """The INTEGER PRIMARY KEY column (a rowid alias): left for SQLite to number."""
    info = list(connection.execute(f'PRAGMA table_info("{table}")'))
    keys = [row for row in info if row[5]]
    if len(keys) == 1 and keys[0][2].upper() == "INTEGER":
        return keys[0][1]
    return None


class Databases:
    """The corpus' databases, created with their template's schema, written in one transaction."""

    def __init__(self):
        self.open: dict[str, sqlite3.Connection] = {}
        self.triggers: dict[str, list[str]] = {}
        self.owned: dict = {}  # template database -> {table: rowids of some session's rows}

    def get(self, target: str, template: str) -> sqlite3.Connection:
        if target not in self.open:
            fresh = not os.path.exists(target)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            connection = sqlite3.connect(target, isolation_level=None)
            connection.execute("PRAGMA journal_mode=DELETE")
            connection.execute("PRAGMA synchronous=OFF")
            if fresh:
                source = sqlite3.connect(template)
                statements = source.execute(
                    "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                    "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, rowid").fetchall()
                virtual = [n for kind, n, sql in statements if sql.upper().startswith("CREATE VIRTUAL")]
                for kind, name, sql in statements:
                    if kind == "table" and name not in virtual and any(name.startswith(v + "_") for v in virtual):
                        continue  # a virtual table's shadow: created with it
                    if kind == "trigger":  # created last: they would stamp rows with the build's time
                        self.triggers.setdefault(target, []).append(sql)
                        continue
                    connection.execute(sql)
                for table in db_tables(source):  # rows that belong to no session: copied once
                    self._copy_shared(source, connection, table, template)
                source.close()
            connection.execute("BEGIN")
            self.open[target] = connection
        return self.open[target]

    def _copy_shared(self, source, target, table: str, template: str) -> None:
        owned = self.owned.get(template, {}).get(table, set())
        names = columns(source, table)
        rows = [row[1:] for row in source.execute(f'SELECT rowid, * FROM "{table}"') if row[0] not in owned]
        if rows:
            marks = ",".join("?" * len(names))
            target.executemany(f'INSERT OR IGNORE INTO "{table}" VALUES ({marks})', rows)

    def close(self) -> None:
        """Commit, then add the triggers (so full-text indexes a trigger fills stay empty)."""
        for target, connection in self.open.items():
            for sql in self.triggers.get(target, []):
                connection.execute(sql)
            connection.execute("COMMIT")
            connection.close()
        self.open.clear()


def copy_rows(source, target, rows: dict, mapping: Mapping, grow_tables: tuple, reps: int,
              rep_mapping) -> None:
    for table, rowids in rows.items():
        names = columns(source, table)
        key = auto_key(source, table)
        marks = ",".join("?" * len(names))
        fetched = [source.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (r,)).fetchone() for r in rowids]
        copies = range(reps if table in grow_tables else 1)
        for rep in copies:
            current = mapping if rep == 0 else rep_mapping(rep)
            for row in fetched:
                values = [None if name == key else current.value(v) for name, v in zip(names, row)]
                target.execute(f'INSERT OR IGNORE INTO "{table}" VALUES ({marks})', values)


# writing the corpus ---------------------------------------------------------------------------------
class Writer:
    def __init__(self, out: str, seed: int, sessions: int, giants: list[float],
                 projects: list[str] | None = None, median: float = 45e3):
        self.out = os.path.abspath(out)
        self.home = os.path.join(self.out, "home")
        self.work = os.path.join(self.out, "work")
        self.random = random.Random(seed)
        self.seed = seed
        self.sessions = sessions
        self.giants = list(giants)
        self.databases = Databases()
        self.listing: list[dict] = []
        self.copy = 0
        self.median = median
        self.projects = projects or [f"{self.random.choice(WORDS)}-{i:03d}" for i in range(max(8, sessions // 60))]
        rest = [1 / (i + 1) ** 1.1 for i in range(len(self.projects) - 1)]
        self.zipf = [sum(rest) * MAIN_SHARE / (1 - MAIN_SHARE)] + rest if rest else [1]  # the main project: 40%

    def project(self) -> str:
        name = self.random.choices(self.projects, self.zipf)[0]
        path = os.path.join(self.work, name)
        os.makedirs(os.path.join(path, ".git"), exist_ok=True)
        return path

    def size_target(self) -> int:
        """Native bytes for an ordinary session: log-normal, median 45 KB (1% above 1.5 MB) unless
        told otherwise."""
        return int(min(30e6, math.exp(self.random.gauss(math.log(self.median), 1.5))))

    def build(self, found: list[Template]) -> None:
        total_weight = sum(t.weight for t in found)
        plans = []
        for template in found:
            units = template.units or [None] * len(self._db_units(template))
            count = max(1, round(self.sessions * template.weight / total_weight))
            plans += [(template, i % len(units)) for i in range(count)]
        self.random.shuffle(plans)
        giant_of = {}
        big_agents = sorted({t.agent for t, _ in plans if t.big})
        for n, size in enumerate(self.giants):  # one giant per agent in turn
            agent = big_agents[n % len(big_agents)]
            index = next(i for i, (t, _) in enumerate(plans) if t.agent == agent and t.big and i not in giant_of)
            giant_of[index] = size
        for n, (template, unit_index) in enumerate(plans):
            target = giant_of.get(n) or self.size_target()
            self.write_copy(template, unit_index, target)
        self.databases.close()

    def _db_units(self, template: Template) -> list[tuple]:
        """(database, rows) of each session of the template's databases, found once."""
        if template.db_units is None:
            template.db_units = []
            for db, table in template.dbs.items():
                found = db_units(os.path.join(template.root, db), table)
                owned = self.databases.owned.setdefault(os.path.join(template.root, db), {})
                for unit in found:
                    for table_name, rowids in unit.items():
                        owned.setdefault(table_name, set()).update(rowids)
                template.db_units += [(db, unit) for unit in found]
        return template.db_units

    def write_copy(self, template: Template, unit_index: int, size: int) -> None:
        self.copy += 1
        key = f"{self.seed}:{self.copy}"
        cwd = self.project()
        words = " ".join(self.random.sample(WORDS, 2))
        start = NOW - self.random.uniform(0, SPREAD_DAYS * 86400)
        unit = template.units[unit_index] if template.units else None
        texts = {rel: read_text(os.path.join(template.root, rel)) for rel in (unit.files if unit else [])}
        db_unit = self._db_unit_for(template, unit, unit_index)
        ids: set = set()
        for text in texts.values():
            if text is not None:
                text_ids(text, ids)
        anchor_text = "".join(t for t in texts.values() if t) or ""
        shared: set = set()  # the session's own ids: the same in every repetition of its turns
        if db_unit:
            db_text = self._db_text(template, db_unit)
            text_ids(db_text, ids)
            anchor_text += db_text
            ids |= self._db_id_columns(template, db_unit)
            others = tuple(t for t in db_unit[1] if t != template.dbs[db_unit[0]])  # not the session row
            text_ids(self._db_text(template, db_unit, exclude=others), shared)
            shared |= self._db_id_columns(template, db_unit, exclude=others)
        for rel in texts:
            ids_by_shape(rel, ids)
            ids_by_shape(rel, shared)
        if unit and unit.grow and texts.get(unit.grow):
            text_ids(head_of(texts[unit.grow]), shared)
        times = epochs_in(anchor_text)
        anchor = min(times) if times else start
        span = (max(times) - anchor + 60) if times else 60
        mapping = Mapping(sorted(ids), template.cwds, cwd, self.home, start - anchor, key, words)

        fixed = {old: new for old, new in mapping.ids.items() if old in shared}

        def rep_mapping(rep: int) -> Mapping:
            return Mapping(sorted(ids), template.cwds, cwd, self.home, start - anchor + rep * span,
                           f"{key}:{rep}", " ".join(self.random.sample(WORDS, 2)), fixed)

        native = 0
        zst = self.random.random() < template.zst_share
        for rel, text in texts.items():
            target = self.target_path(template, mapping.text(rel))
            if text is None:  # binary side file
                native += copy_binary(os.path.join(template.root, rel), target)
                continue
            body = mapping.text(text)
            if unit.grow == rel:
                body = grow(text, body, size, rep_mapping)
            native += self.write_text(target, body, zst and rel == unit.grow)
        if db_unit:
            db, rows = db_unit
            native += self._write_rows(template, db, rows, mapping, size, rep_mapping)
        self.listing.append({"agent": template.agent, "cwd": cwd, "bytes": native, "copy": self.copy})

    def _db_unit_for(self, template: Template, unit: Unit | None, index: int):
        units = self._db_units(template)
        if not units:
            return None
        if unit is None:
            return units[index % len(units)]
        names = " ".join(unit.files)  # the database rows of the unit's session (Codex, Copilot, Cline)
        for db, rows in units:
            if any(sid in names for sid in self._db_id_columns(template, (db, rows))):
                return db, rows
        return None

    def _db_text(self, template: Template, db_unit, exclude=()) -> str:
        db, rows = db_unit
        connection = sqlite3.connect(os.path.join(template.root, db))
        texts = []
        for table, rowids in rows.items():
            if table in exclude:
                continue
            for rowid in rowids:
                row = connection.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()
                texts += [v if isinstance(v, str) else str(v) for v in row if isinstance(v, (str, int, float))]
        connection.close()
        return "\n".join(texts)

    def _db_id_columns(self, template: Template, db_unit, exclude=()) -> set:
        db, rows = db_unit
        connection = sqlite3.connect(os.path.join(template.root, db))
        found = set()
        for table, rowids in rows.items():
            if table in exclude:
                continue
            names = columns(connection, table)
            wanted = [n for n in names if n == "id" or n.endswith("_id")]
            for rowid in rowids:
                row = dict(zip(names, connection.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()))
                found |= {row[n] for n in wanted if isinstance(row[n], str) and len(row[n]) >= 2}
        connection.close()
        return found

    def _write_rows(self, template, db, rows, mapping, size, rep_mapping) -> int:
        path = os.path.join(template.root, db)
        target = self.target_path(template, mapping.text(db))
        source = sqlite3.connect(path)
        one = sum(len(str(v)) for t, r in rows.items() if t in template.grow_tables
                  for rowid in r for v in source.execute(f'SELECT * FROM "{t}" WHERE rowid=?', (rowid,)).fetchone())
        reps = max(1, round(size / one)) if one and template.grow_tables else 1
        copy_rows(source, self.databases.get(target, path), rows, mapping, template.grow_tables, reps, rep_mapping)
        source.close()
        return one * reps

    def target_path(self, template: Template, rel: str) -> str:
        if rel.startswith("projects/"):  # a store inside the project (Aider, Crush)
            return os.path.join(self.work, rel[len("projects/"):])
        return os.path.join(self.home, rel)

    def write_text(self, target: str, text: str, zst: bool) -> int:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        data = text.encode()
        if os.path.exists(target):
            data = merged(target, data)
        if zst:
            import zstandard

            archived = os.path.join(self.home, ".codex", "archived_sessions", os.path.basename(target) + ".zst")
            os.makedirs(os.path.dirname(archived), exist_ok=True)
            with open(archived, "wb") as handle:
                handle.write(zstandard.ZstdCompressor(level=3).compress(data))
            return len(data)
        with open(target, "wb") as handle:
            handle.write(data)
        return len(data)


def merged(target: str, data: bytes) -> bytes:
    """A file two copies share (Gemini's projects.json, Kimi's kimi.json, Aider's history): JSON
    objects merged, anything else appended."""
    with open(target, "rb") as handle:
        old = handle.read()
    if old == data:
        return data
    try:
        return json.dumps(merge_json(json.loads(old), json.loads(data)), indent=2).encode()
    except ValueError:
        return old + b"\n" + data


def merge_json(old, new):
    if isinstance(old, dict) and isinstance(new, dict):
        return {**old, **{k: merge_json(old[k], v) if k in old else v for k, v in new.items()}}
    if isinstance(old, list) and isinstance(new, list):
        return old + [item for item in new if item not in old]
    return new


def read_text(path: str) -> str | None:
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def copy_binary(source: str, target: str) -> int:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(source, target)
    return os.path.getsize(target)


PARENT_KEYS = (("parentUuid", "uuid"), ("parentId", "id"))


def head_of(text: str) -> str:
    """The lines before a session's first prompt (its header: session ids, settings)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if "SCENARIO " in line), len(lines))
    return "".join(lines[:start])


def grow(template_text: str, first: str, size: int, rep_mapping) -> str:
    """`first` (the copy's text) with its turns repeated until it holds about `size` bytes. The
    turns are the lines from the first prompt on; each repetition gets fresh ids and later times,
    and its first record's parent is the previous repetition's last record."""
    lines = template_text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if "SCENARIO " in line), None)
    body = "".join(lines[start:]) if start is not None else ""
    if not body or len(first) >= size:
        return first
    reps = max(0, round((size - len(first)) / len(body)))
    out = [first if first.endswith("\n") else first + "\n"]
    last = last_id(first)
    for rep in range(1, reps + 1):
        text = rep_mapping(rep).text(body)
        text = relink(text, last)
        last = last_id(text) or last
        out.append(text)
    return "".join(out)


def last_id(text: str):
    for line in reversed(text.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        for _, own in PARENT_KEYS:
            if isinstance(record, dict) and isinstance(record.get(own), str):
                return own, record[own]
    return None


def relink(text: str, last) -> str:
    """Point the first record that has a parent at `last` (same id key kind)."""
    if not last:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        for parent, own in PARENT_KEYS:
            if isinstance(record, dict) and own == last[0] and parent in record:
                record[parent] = last[1]
                lines[i] = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                return "\n".join(lines)
    return text


def build(out: str, seed: int, sessions: int, giants: list[float]) -> list[dict]:
    scratch = tempfile.mkdtemp(prefix="corpus-templates-")
    try:
        writer = Writer(out, seed, sessions, giants)
        writer.build(templates(scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return writer.listing


# a heavy user's Claude Code store (--huge) ---------------------------------------------------------
HUGE_PROJECTS = 20
HUGE_PER_PROJECT = 2000
HUGE_MEDIAN = 81e3  # bytes: 40,000 sessions of a mean of ~250 KB, ~10 GB


def build_huge(out: str, seed: int) -> list[dict]:
    """HUGE_PER_PROJECT distinct Claude Code sessions written as every other corpus is, in the
    project `huge-00`, then copied into each of HUGE_PROJECTS projects (`huge-NN`, a name of the
    same length) under fresh session ids: the store of someone with years of sessions."""
    writer = Writer(out, seed, HUGE_PER_PROJECT, [], projects=["huge-00"], median=HUGE_MEDIAN)
    writer.build([claude_template()])
    base = os.path.join(writer.home, ".claude", "projects", slug(os.path.join(writer.work, "huge-00")))
    names = sorted(os.listdir(base))
    listing = [dict(copy) for copy in writer.listing]
    for number in range(1, HUGE_PROJECTS):
        project = f"huge-{number:02d}"
        os.makedirs(os.path.join(writer.work, project, ".git"), exist_ok=True)
        folder = os.path.join(os.path.dirname(base), os.path.basename(base).replace("huge-00", project))
        os.makedirs(folder, exist_ok=True)
        for name in names:
            size = clone_session(os.path.join(base, name), folder, "huge-00", project, f"{seed}:{number}")
            listing.append({"agent": "claude", "cwd": os.path.join(writer.work, project), "bytes": size})
    return listing


# Claude Code alone (--claude) -----------------------------------------------------------------------
CLAUDE_SESSIONS = 1000
CLAUDE_PROJECTS = 10  # besides the main project, which holds half of the sessions


def build_claude(out: str, seed: int) -> list[dict]:
    """CLAUDE_SESSIONS // 2 distinct Claude Code sessions in the project `claude-00`, and each of
    them cloned once, under a fresh id, into one of CLAUDE_PROJECTS other projects (`claude-NN`):
    the corpus of issue 19's first measurements (1,000 sessions, 500 in the project)."""
    writer = Writer(out, seed, CLAUDE_SESSIONS // 2, [], projects=["claude-00"])
    writer.build([claude_template()])
    base = os.path.join(writer.home, ".claude", "projects", slug(os.path.join(writer.work, "claude-00")))
    listing = [dict(copy) for copy in writer.listing]
    for index, name in enumerate(sorted(os.listdir(base))):
        project = f"claude-{1 + index % CLAUDE_PROJECTS:02d}"
        os.makedirs(os.path.join(writer.work, project, ".git"), exist_ok=True)
        folder = os.path.join(os.path.dirname(base), os.path.basename(base).replace("claude-00", project))
        os.makedirs(folder, exist_ok=True)
        size = clone_session(os.path.join(base, name), folder, "claude-00", project, f"{seed}:{index}")
        listing.append({"agent": "claude", "cwd": os.path.join(writer.work, project), "bytes": size})
    return listing


def clone_session(path: str, folder: str, origin: str, project: str, key: str) -> int:
    """A copy of a Claude Code transcript of the project `origin` in `project` (a name of the same
    length; its folder), under a fresh session id; its size."""
    old = os.path.basename(path)[: -len(".jsonl")]
    new = new_id(old, key, 0)
    with open(path, "rb") as handle:
        data = handle.read().replace(old.encode(), new.encode()).replace(origin.encode(), project.encode())
    with open(os.path.join(folder, new + ".jsonl"), "wb") as handle:
        handle.write(data)
    return len(data)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="about 200 sessions (a quick run)")
    parser.add_argument("--huge", action="store_true",
                        help=f"{HUGE_PROJECTS * HUGE_PER_PROJECT:,} Claude Code sessions in {HUGE_PROJECTS} "
                             f"projects of {HUGE_PER_PROJECT:,}, about 10 GB (a heavy user)")
    parser.add_argument("--claude", action="store_true",
                        help=f"{CLAUDE_SESSIONS:,} Claude Code sessions, half of them in one project")
    parser.add_argument("--sessions", type=int, help="number of sessions (default 5000; 200 with --small)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--giant-mb", help="sizes of the giant sessions, comma-separated "
                                           "(default 200,120,80,50; 20,8 with --small)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "corpus", "full"))
    args = parser.parse_args(argv)
    sessions = args.sessions or (200 if args.small else 5000)
    sizes = args.giant_mb or ("20,8" if args.small else "200,120,80,50")
    giants = [float(size) * 1e6 for size in sizes.split(",") if size.strip()]
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    if args.huge:
        listing = build_huge(args.out, args.seed)
    elif args.claude:
        listing = build_claude(args.out, args.seed)
    else:
        listing = build(args.out, args.seed, sessions, giants)
    summary = {"seed": args.seed, "sessions": len(listing), "native_bytes": sum(s["bytes"] for s in listing),
               "projects": sorted({s["cwd"] for s in listing}), "copies": listing}
    with open(os.path.join(args.out, "corpus.json"), "w") as handle:
        json.dump(summary, handle, indent=1)
    print(f"{summary['sessions']} session copies, {summary['native_bytes'] / 1e6:.0f} MB native, "
          f"{len(summary['projects'])} projects in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
