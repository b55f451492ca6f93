"""The fault corpus: every agent's store (tests/homes.py), damaged in the ways real stores get
damaged: bad bytes, cut files, odd file-system entries, unreadable files, broken or locked
databases, corrupt archives. For every case, discovery and translation finish, every document
produced is valid, the damaged session is still there with a warning (nothing is lost), the other
sessions are untouched, and no store file changes. The CLI gives one clear line or succeeds,
never a traceback. Damage to single fields (wrong types, ids): test_fault_fields.py."""

import functools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import pytest

from atif.validate import validate
from discovery import catalog
from rendering import documents
from helpers import ROOT, assert_clear, base_env, cli, run_main, tree_digest, write_jsonl
from homes import agent_homes, by_agent

HOMES = agent_homes()


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


def store_home(home, tmp_path) -> tuple[dict, dict]:
    """The agent's store in tmp_path/store (its $HOME, and its project when the store lives
    there), with the documents of the undamaged store."""
    (tmp_path / "store").mkdir()
    env = home.build(tmp_path / "store")
    return env, translate_all(env)


def store_root(env) -> str:
    """Where the store's files are: $HOME's parent (Crush keeps its database in the project)."""
    return os.path.dirname(env["HOME"])


def session_file(source: str) -> str:
    """The file a session's records are in: the source, or for a folder source (a Roo task)
    its largest file."""
    if os.path.isdir(source):
        return max((os.path.join(source, n) for n in sorted(os.listdir(source))), key=os.path.getsize)
    return source


def is_database(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(16).startswith(b"SQLite format 3")


def text_sources(baseline: dict) -> list[tuple[str, str]]:
    """(source, file) for the sessions kept in text (JSON, JSONL, Markdown), not in databases."""
    return [(p, session_file(p)) for p in baseline if not is_database(session_file(p))]


def text_store(home, tmp_path) -> tuple[dict, dict, list[tuple[str, str]]]:
    """`store_home` with the store's text sources; a store that is a database is skipped here
    (test_sqlite_faults damages those)."""
    env, baseline = store_home(home, tmp_path)
    sources = text_sources(baseline)
    if not sources:
        pytest.skip("the store is a database (test_sqlite_faults)")
    return env, baseline, sources


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


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_text_faults(home, tmp_path):
    env, baseline, sources = text_store(home, tmp_path)
    source, target = sources[0]
    original = open(target, "rb").read()
    others = {p: [d["steps"] for d in docs] for p, docs in baseline.items() if p != source}
    for name, fault in TEXT_FAULTS.items():
        with open(target, "wb") as handle:
            handle.write(fault(original))
        before = tree_digest(store_root(env), skip=env["XDG_CACHE_HOME"])
        found = translate_all(env)
        assert tree_digest(store_root(env), skip=env["XDG_CACHE_HOME"]) == before, name
        assert {p: [d["steps"] for d in docs] for p, docs in found.items() if p != source} == others, name
        if name == "empty" and (len(baseline[source]) > 1 or target.endswith(".md")):
            continue  # a file of several sessions, or of runs (Aider's), holds none once empty
        if name in ("invalid_utf8", "nul_bytes", "garbage_line", "empty"):
            assert source in found, f"{name}: session lost"
            if name != "empty" and target.endswith(".jsonl"):
                assert warned(found[source]), f"{name}: no warning"


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_truncated_at_many_offsets(home, tmp_path):
    env, baseline, sources = text_store(home, tmp_path)
    source, target = max(sources, key=lambda pair: os.path.getsize(pair[1]))
    original = open(target, "rb").read()
    for fraction in (0.03, 0.11, 0.25, 0.38, 0.5, 0.61, 0.74, 0.87, 0.95, 0.999):
        cut = original[: int(len(original) * fraction)]
        with open(target, "wb") as handle:
            handle.write(cut)
        found = translate_all(env)
        if not target.endswith(".jsonl") or complete_last_line(cut):
            continue
        assert source in found, f"session lost at {fraction}"
        assert warned(found[source]), f"no warning at {fraction}"


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_filesystem_faults(home, tmp_path):
    """A directory where a file should be, a dangling symlink, a symlink loop, a FIFO:
    discovery skips them, and the other sessions are unaffected. (Unreadable files:
    test_unreadable_files.)"""
    env, baseline = store_home(home, tmp_path)
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


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_sqlite_faults(home, tmp_path):
    env, baseline = store_home(home, tmp_path)
    databases = sorted({p for p in baseline if is_database(session_file(p))})
    if not databases:
        pytest.skip("the store keeps no sessions in SQLite")
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
    """Codex archives: a .zst that is garbage after its magic, and a real session compressed
    then cut short. Both stay listed with a warning; the cut one keeps its complete lines."""
    import zstandard

    env, baseline = store_home(by_agent("codex"), tmp_path)
    archived = os.path.join(env["HOME"], ".codex", "archived_sessions")
    os.makedirs(archived)
    garbage = os.path.join(archived, "rollout-2026-01-01T00-00-00-0000aaaa-0000-0000-0000-000000000000.jsonl.zst")
    with open(garbage, "wb") as handle:
        handle.write(b"\x28\xb5\x2f\xfd" + os.urandom(300))
    source = max(baseline, key=os.path.getsize)
    with open(source, "rb") as handle:
        lines = handle.read().splitlines(keepends=True)
    half = len(lines) // 2  # two frames, as a writer that flushes now and then leaves them
    second = zstandard.ZstdCompressor().compress(b"".join(lines[half:]))
    packed = zstandard.ZstdCompressor().compress(b"".join(lines[:half])) + second[: len(second) // 2]
    cut = os.path.join(archived, "rollout-2026-01-02T00-00-00-0000bbbb-0000-0000-0000-000000000000.jsonl.zst")
    with open(cut, "wb") as handle:
        handle.write(packed)
    os.remove(source)  # the archive now holds the only copy of that session
    found = translate_all(env)
    assert warned(found[garbage])
    (doc,) = found[cut]
    (original,) = baseline[source]
    assert 1 < len(doc["steps"]) < len(original["steps"])
    assert any("cut short" in w for w in doc["extra"]["warnings"]), doc["extra"]["warnings"]


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
    write_jsonl(os.path.join(project, "s.jsonl"), records)
    (session,) = catalog.discover(env, use_cache=False).sessions
    doc = documents.translate(session, env)
    assert len(doc["steps"][0]["message"]) == len(big) + 3 and doc["steps"][1]["message"] == "ok"


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_cli_survives_damage_with_clear_output(home, tmp_path):
    """Two sessions cut in half and ended with garbage: every command succeeds, or gives one
    clear line and a non-zero exit."""
    env, baseline = store_home(home, tmp_path)
    for source in list(baseline)[:2]:
        with open(session_file(source), "r+b") as handle:
            data = handle.read()
            handle.seek(0)
            handle.write(data[: len(data) // 2] + b"\xff\x00garbage")
            handle.truncate()
    cwd = env.get("PWD", str(tmp_path))
    exported = cli("export", "--all", "--out", str(tmp_path / "out"), env=env, cwd=cwd)
    assert exported.returncode == 0, exported.stderr
    assert_clear(exported)
    listed = run_main(env, ["list", "--all", "--json"], cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    ids = [json.loads(line)["id"] for line in listed.stdout.splitlines()]
    for args in [["list", "--all"], ["search", "--content", "SCENARIO"], ["stats", "--all"],
                 ["agents"]] + [["show", i] for i in ids] + [["show", i, "--markdown"] for i in ids]:
        assert_clear(run_main(env, args, cwd=cwd))


@functools.lru_cache(maxsize=None)
def unprivileged() -> tuple | None:
    """A command prefix under which a mode-000 file cannot be read, as for any user: () when
    the tests do not run as root; as root, setpriv taking away the two capabilities that let
    root read anything (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH); None when neither works here."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return None
    prefix = (setpriv, "--bounding-set=-dac_override,-dac_read_search", "--")
    with tempfile.NamedTemporaryFile() as probe:
        os.chmod(probe.name, 0)
        try:
            denied = subprocess.run([*prefix, sys.executable, "-c", f"open({probe.name!r})"],
                                    capture_output=True, timeout=60).returncode != 0
        except OSError:
            return None
    return prefix if denied else None


def run_unprivileged(env, *args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*unprivileged(), sys.executable, os.path.join(ROOT, "trajectoriz.py"), *args],
                          env=env, cwd=cwd, capture_output=True, timeout=120)


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_unreadable_files(home, tmp_path):
    """A session file that cannot be read (permission denied): every command succeeds or gives
    one clear line; the session stays listed, its document saying why it is empty; the other
    sessions are untouched."""
    if unprivileged() is None:
        pytest.skip("running as root without setpriv: root reads every file, so none can be unreadable")
    env, baseline = store_home(home, tmp_path)
    cwd = env.get("PWD", str(tmp_path))
    before = {r["id"]: r for r in map(json.loads, run_main(env, ["list", "--all", "--json"], cwd=cwd).stdout.splitlines())}
    target = sorted(baseline)[0]
    os.chmod(session_file(target), 0)
    try:
        listed = run_unprivileged(env, "list", "--all", "--json", cwd=cwd)
        assert_clear(listed)
        after = {r["id"]: r for r in map(json.loads, listed.stdout.splitlines())}
        for ident, record in before.items():
            if record["source"] != target:
                assert after[ident]["steps"] == record["steps"], record["source"]
        unreadable = [r for r in after.values() if r["source"] == target]
        assert unreadable, "the unreadable session vanished from the listing"
        for record in unreadable:
            shown = run_unprivileged(env, "show", record["id"], cwd=cwd)
            assert_clear(shown)
            doc = json.loads(shown.stdout)
            assert validate(doc)[0] == [] and (doc["extra"].get("warnings") or doc["extra"].get("error"))
        for args in (["export", "--all", "--out", str(tmp_path / "out")], ["search", "--content", "SCENARIO"],
                     ["agents"]):
            assert_clear(run_unprivileged(env, *args, cwd=cwd))
    finally:
        os.chmod(session_file(target), 0o644)


def test_the_mount_serves_every_file_of_a_damaged_store(tmp_path):
    """A project whose sessions are cut mid-line, end in garbage, are empty, and sit beside a
    FIFO, a folder and a dangling link named like sessions: the mount lists every session and
    serves each file complete and valid, exactly as `show` prints it."""
    from test_memory import FUSE_PROBLEM, client, make_store, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    env, proj, _ = make_store(tmp_path)
    sources = sorted({r["source"] for r in map(json.loads, cli("list", "--json", "--dir", proj, env=env).stdout.splitlines())
                      if not is_database(r["source"])})
    assert len(sources) >= 3
    damage = [lambda data: data[: len(data) // 2], lambda data: data + b"\xff\x00{garbage", lambda data: b""]
    for source, change in zip(sources, damage):
        with open(source, "rb") as handle:
            data = handle.read()
        with open(source, "wb") as handle:
            handle.write(change(data))
    folder = os.path.dirname(sources[0])
    os.mkfifo(os.path.join(folder, "fifo.jsonl"))
    os.mkdir(os.path.join(folder, "folder.jsonl"))
    os.symlink(os.path.join(folder, "missing.jsonl"), os.path.join(folder, "dangling.jsonl"))
    listed = {r["file"]: r for r in map(json.loads, cli("list", "--json", "--dir", proj, env=env).stdout.splitlines())}
    point = os.path.join(proj, "memory")
    try:
        mount(env, proj)
        cards = {name.replace(".atif.json", kind) for name in listed for kind in (".card.md", ".transcript.md")}
        assert set(client("ls", point).stdout.split()) == set(listed) | cards | {"README.md", "INDEX.md"}
        for name, record in listed.items():
            served = client("cat", os.path.join(point, name))
            assert served.returncode == 0, served.stderr
            assert served.stdout.encode() == cli("show", name, env=env).stdout
            doc = json.loads(served.stdout)
            assert validate(doc)[0] == []
            if record["source"] in sources[:3]:
                assert doc["extra"].get("warnings"), name
    finally:
        take_down(point)
