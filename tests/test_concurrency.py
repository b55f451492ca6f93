"""The mount under load: many readers at once while sessions grow, appear and disappear.

Readers (`cat`, `ls -l`, `wc -c`, `grep`) run in parallel, each command under `timeout -s KILL`
(a hung server leaves its clients in uninterruptible sleep), while a writer appends prompts to
two sessions, adds copies of a session under new ids and removes them again. Every file read
must be one complete, valid document (the old one or the new one, never torn), no command may
time out (no deadlock), and the server must still be up and serving what `show` prints after.

Then sessions recorded fast (a prompt every few milliseconds, now and then rewritten shorter),
one of them keeping old modification times so that it looks settled, read by `cat`, `dd bs=512`,
`jq`, `rg` and a Python reader that reads small chunks with pauses (so that its reads span
changes) and compares fstat's size with what it read: the kernel's page cache and file size are
shared by every handle of a file, and no reader may see them mix two versions.

Bounded: READERS threads for LOAD_SECONDS and LIVE_READERS for LIVE_SECONDS, every client command
at most CLIENT_SECONDS.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time

import pytest

from atif.validate import validate
from core import mounts
from helpers import cli, needs
from test_memory import (FUSE_PROBLEM, LONG_AGO_NS, append_user_message, claude_sessions, client,
                         copy_session, expected_sessions, listed, make_store, mount, servers_of, settle,
                         take_down, wait_for)

READERS = 6
LOAD_SECONDS = 8
CLIENT_SECONDS = 20

pytestmark = pytest.mark.skipif(FUSE_PROBLEM is not None, reason=f"FUSE unavailable: {FUSE_PROBLEM}")


class Load:
    """What the readers saw, collected from their threads."""

    def __init__(self, point: str):
        self.point = point
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.reads = 0
        self.problems: list[str] = []

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)

    def read_one(self, rng: random.Random) -> None:
        listing = client("ls", self.point, seconds=CLIENT_SECONDS)
        if listing.returncode == -9:
            return self.problem("ls timed out")
        names = [n for n in listing.stdout.split() if n.endswith(".atif.json")]
        if not names:
            return self.problem(f"ls listed no session: {listing.stdout!r} {listing.stderr!r}")
        name = rng.choice(names)
        command = rng.choice([["cat"], ["cat"], ["ls", "-l"], ["wc", "-c"], ["grep", "-c", "SCENARIO"]])
        target = self.point if command == ["ls", "-l"] else os.path.join(self.point, name)
        result = client(*command, target, seconds=CLIENT_SECONDS)
        if result.returncode == -9:
            return self.problem(f"{' '.join(command)} {name} timed out")
        if command == ["cat"]:
            self.check_document(name, result)
        with self.lock:
            self.reads += 1

    def check_document(self, name: str, result) -> None:
        if result.returncode != 0:
            if "No such file" not in result.stderr:  # a copy removed between ls and cat
                self.problem(f"cat {name}: {result.stderr.strip()}")
            return
        try:
            doc = json.loads(result.stdout)
        except ValueError as exc:
            return self.problem(f"{name}: torn or incomplete JSON ({exc}), {len(result.stdout)} chars")
        errors, _ = validate(doc)
        if errors:
            self.problem(f"{name}: invalid: {errors[:2]}")
        elif doc["extra"]["short_id"] not in name:
            self.problem(f"{name}: holds session {doc['extra']['short_id']}")

    def reader(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            self.read_one(rng)


def writer(load: Load, env) -> None:
    """Grow two sessions, and add and remove copies of one, until the load stops."""
    first, second = claude_sessions(env)
    copies: list[str] = []
    turn = 0
    while not load.stop.is_set():
        append_user_message(first if turn % 2 else second, f"CONCURRENT-{turn} keep going")
        if turn % 3 == 0:
            copies.append(copy_session(second, f"33333333-0000-4000-8000-{turn:012d}"))
        if len(copies) > 2:
            os.remove(copies.pop(0))
        turn += 1
        time.sleep(0.15)


def test_many_readers_while_sessions_change(tmp_path):
    env, proj, _ = make_store(tmp_path)
    point = os.path.join(proj, "memory")
    try:
        _, pid = mount(env, proj)
        load = Load(point)
        threads = [threading.Thread(target=load.reader, args=(n,)) for n in range(READERS)]
        threads.append(threading.Thread(target=writer, args=(load, env)))
        for thread in threads:
            thread.start()
        time.sleep(LOAD_SECONDS)
        load.stop.set()
        for thread in threads:
            thread.join(timeout=2 * CLIENT_SECONDS + 10)
        assert not any(t.is_alive() for t in threads), "a reader or the writer never came back"
        assert load.problems == [], load.problems[:5]
        assert load.reads >= READERS * 5, f"only {load.reads} reads in {LOAD_SECONDS} s"

        assert servers_of(point) == [pid] and mounts.find(point) is not None, "the server is gone"
        wanted = listed(env, proj)
        shown = lambda: {n for n in client("ls", point, seconds=CLIENT_SECONDS).stdout.split() if n.endswith(".atif.json")}  # noqa: E731
        assert wait_for(lambda: shown() == set(wanted), 10), (shown(), set(wanted))  # rescans are paced
        for name in wanted:
            assert client("cat", os.path.join(point, name), seconds=CLIENT_SECONDS).stdout.encode() == \
                cli("show", name, env=env).stdout
        done = cli("memory", "--unmount", env=env, cwd=proj)
        assert done.returncode == 0 and mounts.find(point) is None, done.stderr
    finally:
        take_down(point)


# reads while sessions are being recorded ----------------------------------------------------------
LIVE_SECONDS = 55
LIVE_READERS = {"cat": 2, "dd": 2, "python": 2, "jq": 2, "rg": 1}
GROWN_BEFORE_REWRITE = 200  # prompts appended before the session is rewritten to its first version

SLOW_READER = r"""
import os, random, sys, time
path, native = sys.argv[1], sys.argv[2]
before = os.stat(native).st_mtime_ns
fd = os.open(path, os.O_RDONLY)
opened = os.fstat(fd).st_size
parts = []
while True:
    part = os.read(fd, random.choice((100, 512, 4096)))
    if not part:
        break
    parts.append(part)
    if random.random() < 0.3:
        time.sleep(random.uniform(0.001, 0.01))
closing = os.fstat(fd).st_size
os.close(fd)
sys.stderr.write(f"{opened} {closing} {int(os.stat(native).st_mtime_ns != before)}\n")
sys.stdout.buffer.write(b"".join(parts))
"""


class Growing:
    """A Claude transcript recorded fast: one prompt appended at a time (one write each, as the
    agent does), and now and then rewritten to its first version, shorter (replaced whole).
    With `old_mtimes`, every write leaves the file a modification time of long ago (a copy that
    kept its times), so that it looks settled although it changes."""

    def __init__(self, path: str, old_mtimes: bool = False):
        self.path, self.old_mtimes, self.writes = path, old_mtimes, 0
        with open(path, "rb") as handle:
            self.original = handle.read()
        records = [json.loads(line) for line in self.original.splitlines() if line.strip()]
        self.prompt = next(r for r in records if r.get("type") == "user" and isinstance(r["message"]["content"], str))
        self.first_parent = [r for r in records if r.get("uuid")][-1]["uuid"]
        self.parent, self.added = self.first_parent, 0

    def grow(self) -> None:
        if self.added >= GROWN_BEFORE_REWRITE:
            return self.rewrite()
        uuid = f"{self.added:08d}-0000-4000-8000-{os.getpid():012d}"
        record = dict(self.prompt, uuid=uuid, parentUuid=self.parent, timestamp="2026-11-29T23:00:00.000Z",
                      message={"role": "user", "content": f"LIVE-{self.added} and then?"})
        with open(self.path, "ab") as handle:
            handle.write(json.dumps(record).encode() + b"\n")
        self.parent, self.added = uuid, self.added + 1
        self.wrote()

    def rewrite(self) -> None:
        with open(self.path + ".new", "wb") as handle:
            handle.write(self.original)
        os.replace(self.path + ".new", self.path)
        self.parent, self.added = self.first_parent, 0
        self.wrote()

    def wrote(self) -> None:
        self.writes += 1
        if self.old_mtimes:
            os.utime(self.path, ns=(LONG_AGO_NS, LONG_AGO_NS + self.writes))


def run_bytes(*command) -> subprocess.CompletedProcess:
    return subprocess.run(["timeout", "-s", "KILL", str(CLIENT_SECONDS), *command], capture_output=True)


class LiveReads:
    """Readers of every kind on the sessions being recorded (and now and then a settled one):
    each document read is checked, each problem kept."""

    def __init__(self, point: str, growing: dict, settled: list[str]):
        self.point, self.growing, self.settled = point, growing, settled
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.reads = {kind: 0 for kind in LIVE_READERS}
        self.spanning = 0  # slow reads during which the session changed
        self.problems: list[str] = []

    def reader(self, kind: str, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            name = rng.choice(list(self.growing) * 4 + self.settled)
            problem = getattr(self, "read_" + kind)(name, os.path.join(self.point, name))
            with self.lock:
                self.reads[kind] += 1
                if problem:
                    self.problems.append(f"{kind} {name}: {problem}")

    def read_cat(self, name: str, path: str) -> str | None:
        return self.document(name, run_bytes("cat", path))

    def read_dd(self, name: str, path: str) -> str | None:
        return self.document(name, run_bytes("dd", f"if={path}", "bs=512", "status=none"))

    def read_rg(self, name: str, path: str) -> str | None:  # rg maps a single file when it can
        return self.document(name, run_bytes("rg", "--no-config", "-N", "--no-filename", "", path))

    def read_jq(self, name: str, path: str) -> str | None:
        done = run_bytes("jq", "-r", ".extra.short_id", path)
        if done.returncode != 0:
            return f"exit {done.returncode}: {done.stderr.decode(errors='replace').strip()[:200]}"
        return None if done.stdout.decode().strip() in name else f"holds {done.stdout!r}"

    def read_python(self, name: str, path: str) -> str | None:
        source = self.growing.get(name) or path
        done = run_bytes(sys.executable, "-c", SLOW_READER, path, source)
        problem = self.document(name, done)
        if problem or done.returncode != 0:
            return problem
        opened, closing, spanned = map(int, done.stderr.split())
        with self.lock:
            self.spanning += spanned
        if not opened == closing == len(done.stdout):
            return f"fstat said {opened} at open and {closing} at close, the handle gave {len(done.stdout)} bytes"
        return None

    @staticmethod
    def document(name: str, done) -> str | None:
        if done.returncode != 0:
            return f"exit {done.returncode}: {done.stderr.decode(errors='replace').strip()[:200]}"
        data = done.stdout
        try:
            doc = json.loads(data)
        except ValueError as exc:
            return f"torn or incomplete JSON ({exc}): {len(data)} bytes, {data.count(0)} NULs"
        errors, _ = validate(doc)
        if errors:
            return f"invalid ATIF: {errors[:2]}"
        return None if doc["extra"]["short_id"] in name else f"holds session {doc['extra']['short_id']}"


def record_fast(load: LiveReads, sessions: list[Growing]) -> None:
    rng = random.Random(7)
    while not load.stop.is_set():
        rng.choice(sessions).grow()
        time.sleep(rng.uniform(0.002, 0.03))


@needs("dd", "jq", "rg")
def test_reads_of_sessions_being_recorded_are_never_torn(tmp_path):
    """Every kind of reader, many at once, on sessions that grow every few milliseconds (and
    shrink back now and then): each read is one complete document, whole from one version, and
    the size fstat gives on a handle is the size that handle reads."""
    env, proj, _ = make_store(tmp_path)
    settle(env)  # the page cache serves them, until they change
    point = os.path.join(proj, "memory")
    sources = {s.source: n for n, s in expected_sessions(env, proj).items()}
    growing = [Growing(path, old_mtimes=n == 0) for n, path in enumerate(claude_sessions(env))]
    try:
        _, pid = mount(env, proj)
        load = LiveReads(point, {sources[g.path]: g.path for g in growing},
                         [n for s, n in sources.items() if s not in {g.path for g in growing}])
        threads = [threading.Thread(target=load.reader, args=(kind, n * 10 + i))
                   for n, (kind, count) in enumerate(LIVE_READERS.items()) for i in range(count)]
        threads.append(threading.Thread(target=record_fast, args=(load, growing)))
        for thread in threads:
            thread.start()
        time.sleep(LIVE_SECONDS)
        load.stop.set()
        for thread in threads:
            thread.join(timeout=2 * CLIENT_SECONDS + 10)
        assert not any(t.is_alive() for t in threads), "a reader or the writer never came back"
        bad = {kind: sum(p.startswith(kind + " ") for p in load.problems) for kind in LIVE_READERS}
        assert load.problems == [], f"bad reads {bad} of {load.reads}: {load.problems[:6]}"
        assert all(load.reads.values()) and load.spanning, (load.reads, load.spanning)

        assert servers_of(point) == [pid], "the server is gone"
        for name in load.growing:  # settled again: the newest version, whole, with its size
            shown = cli("show", name, env=env).stdout
            assert run_bytes("cat", os.path.join(point, name)).stdout == shown
            assert os.path.getsize(os.path.join(point, name)) == len(shown)
    finally:
        take_down(point)
