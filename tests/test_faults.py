"""The fault corpus: every live store, damaged in the ways real stores get damaged. For every
case, discovery and translation finish, every document produced is valid, the damaged session
is still there with a warning (nothing is lost), the other sessions are untouched, and no store
file changes. The CLI gives one clear line or succeeds, never a traceback."""

import glob
import hashlib
import json
import os
import shutil
import sqlite3

import pytest

import catalog
import documents
from atif.validate import validate
from helpers import LIVE, base_env, cli

LIVE_HOMES = sorted(p for p in glob.glob(os.path.join(LIVE, "*")) if os.path.isdir(p))


def snapshot(root: str) -> dict:
    state = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and os.access(path, os.R_OK):
                with open(path, "rb") as handle:
                    state[path] = (hashlib.sha256(handle.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return state


def translate_all(env) -> dict:
    """source path -> list of documents, for every session discovered."""
    found = {}
    for session in catalog.discover(env, use_cache=False).sessions:
        doc, data = documents.document(session, env)
        errors, _ = validate(doc)
        assert errors == [], (session.source, errors[:3])
        assert data == documents.render(session, env)  # deterministic
        found.setdefault(session.source, []).append(doc)
    return found


def copy_home(live: str, tmp_path) -> tuple[dict, dict]:
    home = str(tmp_path / "home")
    shutil.copytree(live, home, symlinks=True)
    env = base_env(tmp_path, home=home)
    return env, translate_all(env)


def text_sources(baseline: dict) -> list[str]:
    """Session files that are text (JSON/JSONL), i.e. not databases."""
    return [p for p in baseline if os.path.isfile(p) and not open(p, "rb").read(16).startswith(b"SQLite format 3")]


def complete_last_line(data: bytes) -> bool:
    """True when cutting lost nothing: the cut fell on a line end, or the unterminated last
    line is still a whole JSON value."""
    if data.endswith(b"\n"):
        return True
    try:
        json.loads(data.rsplit(b"\n", 1)[-1])
        return True
    except ValueError:
        return False


def warned(docs: list) -> bool:
    return any(d["extra"].get("warnings") or d["extra"].get("error") for d in docs)


TEXT_FAULTS = {
    "invalid_utf8": lambda data: data[: len(data) // 2] + b"\xff\xfe\xc3\x28" + data[len(data) // 2:],
    "nul_bytes": lambda data: data[: len(data) // 3] + b"\x00" * 64 + data[len(data) // 3:],
    "garbage_line": lambda data: data.replace(b"\n", b"\n{not json at all\n", 1),
    "wrong_types": lambda data: data.replace(b'"', b'"', 0).replace(b'"content":"', b'"content":42,"x":"', 3)
                                    .replace(b'"timestamp":"', b'"timestamp":[1],"t":"', 2),
    "unknown_records": lambda data: data.replace(b"\n", b'\n{"type":"from-the-future","payload":{"x":1}}\n', 2),
    "deep_nesting": lambda data: data.replace(b"\n", b"\n" + b'{"type":"user","deep":' + b"[" * 5000 + b"]" * 5000 + b"}\n", 1),
    "timestamps_backwards": lambda data: data.replace(b"2026-11-29T20", b"2001-01-01T00", 3),
    "no_timestamps": lambda data: data.replace(b'"timestamp"', b'"stamp"'),
    "duplicated_lines": lambda data: data + data,
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("live", LIVE_HOMES, ids=os.path.basename)
def test_text_faults(live, tmp_path):
    env, baseline = copy_home(live, tmp_path)
    sources = text_sources(baseline)
    if not sources:
        pytest.skip("no text session files (or no translator) for this store")
    target = sources[0]
    original = open(target, "rb").read()
    others = {p: [d["steps"] for d in docs] for p, docs in baseline.items() if p != target}
    for name, fault in TEXT_FAULTS.items():
        with open(target, "wb") as handle:
            handle.write(fault(original))
        before = snapshot(env["HOME"])
        found = translate_all(env)
        assert snapshot(env["HOME"]) == before, name
        assert {p: [d["steps"] for d in docs] for p, docs in found.items() if p != target} == others, name
        if name in ("invalid_utf8", "nul_bytes", "garbage_line", "empty"):
            assert target in found or os.path.basename(target).startswith("agent-"), f"{name}: session lost"
            if name != "empty" and target.endswith(".jsonl"):
                assert warned(found[target]), f"{name}: no warning"


@pytest.mark.parametrize("live", LIVE_HOMES, ids=os.path.basename)
def test_truncated_at_many_offsets(live, tmp_path):
    env, baseline = copy_home(live, tmp_path)
    sources = text_sources(baseline)
    if not sources:
        pytest.skip("no text session files (or no translator) for this store")
    target = max(sources, key=os.path.getsize)
    original = open(target, "rb").read()
    for fraction in (0.03, 0.11, 0.25, 0.38, 0.5, 0.61, 0.74, 0.87, 0.95, 0.999):
        cut = original[: int(len(original) * fraction)]
        with open(target, "wb") as handle:
            handle.write(cut)
        found = translate_all(env)
        if not target.endswith(".jsonl") or complete_last_line(cut):
            continue
        assert target in found, f"session lost at {fraction}"
        assert warned(found[target]), f"no warning at {fraction}"


@pytest.mark.parametrize("live", LIVE_HOMES, ids=os.path.basename)
def test_filesystem_faults(live, tmp_path):
    """A directory where a file should be, a dangling symlink, a symlink loop, an unreadable
    file: discovery skips or reports them, and the other sessions are unaffected."""
    env, baseline = copy_home(live, tmp_path)
    if not baseline:
        pytest.skip("no translator for this store yet")
    target = sorted(baseline)[0]
    folder = os.path.dirname(target)
    os.symlink(folder, os.path.join(folder, "loop"))
    os.symlink(os.path.join(folder, "missing.jsonl"), os.path.join(folder, "dangling.jsonl"))
    os.mkdir(os.path.join(folder, "dir-not-file.jsonl"))
    fifo = os.path.join(folder, "fifo.jsonl")
    os.mkfifo(fifo)  # opening it would block forever: discovery must never open one
    found = translate_all(env)
    for source, docs in baseline.items():
        assert [d["steps"] for d in found[source]] == [d["steps"] for d in docs]


@pytest.mark.parametrize("live", LIVE_HOMES, ids=os.path.basename)
def test_sqlite_faults(live, tmp_path):
    env, baseline = copy_home(live, tmp_path)
    databases = sorted({p for p in baseline if open(p, "rb").read(16).startswith(b"SQLite format 3")})
    if not databases:
        pytest.skip("no SQLite session store (or no translator) for this store")
    db = databases[0]
    pristine = {p: open(p, "rb").read() for p in (db, db + "-wal", db + "-shm") if os.path.exists(p)}

    def restore():
        for path, data in pristine.items():
            with open(path, "wb") as handle:
                handle.write(data)

    # locked by a running agent: an exclusive transaction held open on a copy-of-record
    locker = sqlite3.connect(db, timeout=0.1)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        found = translate_all(env)
        assert {p: len(d) for p, d in found.items()} == {p: len(d) for p, d in baseline.items()}
    finally:
        locker.rollback()
        locker.close()
    restore()
    for name, damage in {
        "garbage": lambda data: b"SQLite format 3\x00" + os.urandom(4096),
        "truncated": lambda data: data[: len(data) // 3],
        "not_sqlite": lambda data: b"this is not a database\n" * 10,
        "empty": lambda data: b"",
    }.items():
        with open(db, "wb") as handle:
            handle.write(damage(pristine[db]))
        translate_all(env)  # no exception: a problem or failure documents
        restore()
    # unknown schema: a valid database whose tables are not the agent's
    os.remove(db)
    for side in ("-wal", "-shm"):
        if os.path.exists(db + side):
            os.remove(db + side)
    other = sqlite3.connect(db)
    other.execute("CREATE TABLE unrelated(x)")
    other.commit()
    other.close()
    translate_all(env)


def test_corrupt_zst_archive(tmp_path):
    codex = os.path.join(LIVE, "codex-0.171.0")
    if not os.path.isdir(codex):
        pytest.skip("no codex store")
    env, baseline = copy_home(codex, tmp_path)
    if not baseline:
        pytest.skip("no codex translator yet")
    archived = os.path.join(env["HOME"], ".codex", "archived_sessions")
    os.makedirs(archived)
    with open(os.path.join(archived, "rollout-2026-01-01T00-00-00-0000aaaa-0000-0000-0000-000000000000.jsonl.zst"), "wb") as handle:
        handle.write(b"\x28\xb5\x2f\xfd" + os.urandom(300))
    translate_all(env)


def test_a_huge_single_line(tmp_path):
    """A 100 MB line (a tool output pasted whole) is read, not choked on."""
    env = base_env(tmp_path)
    project = os.path.join(env["HOME"], ".claude", "projects", "-p")
    os.makedirs(project)
    big = "x" * (100 * 1024 * 1024)
    records = [{"type": "user", "uuid": "u1", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z",
                "message": {"role": "user", "content": "hi " + big}},
               {"type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:01Z",
                "message": {"id": "m1", "model": "x", "content": [{"type": "text", "text": "ok"}]}}]
    with open(os.path.join(project, "s.jsonl"), "w") as handle:
        handle.write("\n".join(json.dumps(r) for r in records) + "\n")
    (session,) = catalog.discover(env, use_cache=False).sessions
    doc = documents.translate(session, env)
    assert len(doc["steps"][0]["message"]) == len(big) + 3 and doc["steps"][1]["message"] == "ok"


@pytest.mark.parametrize("live", LIVE_HOMES, ids=os.path.basename)
def test_cli_survives_damage_with_clear_output(live, tmp_path):
    env, baseline = copy_home(live, tmp_path)
    for source in list(baseline)[:2]:
        with open(source, "r+b") as handle:
            data = handle.read()
            handle.seek(0)
            handle.write(data[: len(data) // 2] + b"\xff\x00garbage")
            handle.truncate()
    for args in (["list", "--all"], ["export", "--all", "--out", str(tmp_path / "out")]):
        result = cli(*args, env=env, cwd=str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert b"Traceback" not in result.stderr
