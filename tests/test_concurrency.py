"""The mount under load: many readers at once while sessions grow, appear and disappear.

Readers (`cat`, `ls -l`, `wc -c`, `grep`) run in parallel, each command under `timeout -s KILL`
(a hung server leaves its clients in uninterruptible sleep), while a writer appends prompts to
two sessions, adds copies of a session under new ids and removes them again. Every file read
must be one complete, valid document (the old one or the new one, never torn), no command may
time out (no deadlock), and the server must still be up and serving what `show` prints after.

Bounded: READERS threads for LOAD_SECONDS, every client command at most CLIENT_SECONDS.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time

import pytest

import mounts
from atif.validate import validate
from helpers import cli
from test_memory import (FUSE_PROBLEM, append_user_message, claude_sessions, client, copy_session,
                         listed, make_store, mount, servers_of, take_down, wait_for)

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
        shown = lambda: {n for n in client("ls", point, seconds=CLIENT_SECONDS).stdout.split()} - {"README.md"}  # noqa: E731
        assert wait_for(lambda: shown() == set(wanted), 10), (shown(), set(wanted))  # rescans are paced
        for name in wanted:
            assert client("cat", os.path.join(point, name), seconds=CLIENT_SECONDS).stdout.encode() == \
                cli("show", name, env=env).stdout
        done = cli("memory", "--unmount", env=env, cwd=proj)
        assert done.returncode == 0 and mounts.find(point) is None, done.stderr
    finally:
        take_down(point)
