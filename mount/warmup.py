"""Rendering a mount's sessions ahead of time, in worker processes.

When requests walk the mount's directory (memoryfs: each file asked about is listed next to
the previous one), the sessions ahead of the walk whose size is not known yet are handed to
`Warmer`, which renders them in the background, one worker process per core, in the walk's
order (the order `ls -l`, `grep -r` or `cat memory/*` will ask for them). A worker translates
a session, stores its document, its card and its transcript in the document cache (`doccache`,
views.py) and sends back its totals (`documents.totals` and the views' sizes, with the stamp they
are valid for), which the mount records in its size
cache. The mount then answers `getattr` from the size cache and `open` from the document
cache: translation runs on every core instead of the single serving thread, and the big
documents and the SQLite snapshots of a cold start live in the workers, which exit when
nothing is left to do.

Exactness is unchanged: the mount compares each recorded stamp with the session's current one,
exactly as for any other entry of the size cache. A `getattr` or `open` that arrives before its
session's result asks `wait()`, which moves the session to the front of the queue and waits for
it, at most WAIT_SECONDS; when no worker can do it (they died, or hang), the mount renders the
session itself.

The workers are copies of trajectoriz (`trajectoriz memory-worker`, a command not shown in the
help, see trajectoriz.main) started with `subprocess`, never `fork`ed: the server has threads.
They read one session per line on stdin and answer one line of totals on stdout; they stop
when their stdin closes (when the queue is empty, when the mount ends, or when the server
dies) and are killed when the mount ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque

from core.jsonlib import orjson

from agents.base import Session
from rendering import documents, views

WORKER_ARGUMENT = "memory-worker"  # trajectoriz.main runs run_worker for it
WAIT_SECONDS = 30.0  # a request's longest wait for a worker (rendering a 200 MB session: ~4 s)
IN_FLIGHT = 2  # sessions handed to a worker at once: it has the next while its answer is read


class Warmer:
    """Sessions waiting to be rendered, and the worker processes rendering them. `record` is
    called (from a worker's thread) with each session and its totals."""

    def __init__(self, command: list[str], env, record, workers: int):
        self._command = command
        self._env = env
        self._record = record
        self._workers = workers
        self._pending: OrderedDict = OrderedDict()  # cache key -> session, in rendering order
        self._busy: set = set()                     # cache keys a worker is rendering
        self._running = 0
        self._processes: list[subprocess.Popen] = []
        self._threads: list[threading.Thread] = []
        self._stopped = False
        self._changed = threading.Condition()

    def warm(self, sessions, first: bool = False) -> None:
        """Queue `sessions` (after those already queued; `first`: before them, in their order)
        and start workers for them. Called from the serving thread: the workers inherit its
        signal mask."""
        with self._changed:
            if self._stopped:
                return
            for session in reversed(sessions) if first else sessions:
                key = documents.cache_key(session)
                if key not in self._busy:
                    self._pending[key] = session
                    if first:
                        self._pending.move_to_end(key, last=False)
            wanted = min(self._workers, len(self._pending)) - self._running
            for _ in range(max(0, wanted)):
                self._start_worker()

    def wait(self, session) -> None:
        """If `session` is queued or being rendered, wait until a worker has rendered it (first
        in line from now on), until no worker is left to do it, or at most WAIT_SECONDS: a
        request never waits without a deadline (the caller then renders the session itself)."""
        key = documents.cache_key(session)
        deadline = time.monotonic() + WAIT_SECONDS
        with self._changed:
            if key in self._pending:
                self._pending.move_to_end(key, last=False)
            while key in self._busy or (key in self._pending and self._running):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            self._pending.pop(key, None)

    def wait_all(self, sessions, deadline: float) -> None:
        """Wait until the workers have rendered every one of `sessions` that is queued or being
        rendered, until no worker is left, or until `deadline` (time.monotonic())."""
        keys = [documents.cache_key(s) for s in sessions]
        with self._changed:
            while any(k in self._busy or (k in self._pending and self._running) for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)

    def stop(self) -> None:
        """Kill the workers and wait for their threads (the mount is ending)."""
        with self._changed:
            self._stopped = True
            self._pending.clear()
            processes, threads = list(self._processes), list(self._threads)
        for process in processes:
            try:
                process.kill()
            except OSError:
                pass
        for thread in threads:
            thread.join(timeout=5)

    def idle(self) -> bool:
        with self._changed:
            return not self._pending and not self._busy and self._running == 0

    def _start_worker(self) -> None:
        try:
            process = subprocess.Popen(self._command + [WORKER_ARGUMENT], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, env=dict(self._env), cwd="/")
        except OSError as exc:  # the sessions are rendered by the server instead
            print(f"trajectoriz: cannot start a renderer: {exc}", file=sys.stderr, flush=True)
            return
        thread = threading.Thread(target=self._feed, args=(process,), name="warm-up", daemon=True)
        self._processes.append(process)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        self._running += 1
        thread.start()

    def _feed(self, process: subprocess.Popen) -> None:
        """Hand sessions to one worker until none is left, the mount ends or the worker dies;
        IN_FLIGHT of them at a time, so that the worker starts the next one as soon as it has
        answered (not when this thread, which shares the serving thread's interpreter, gets to
        read the answer and write another request)."""
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        retired = False
        flight: deque = deque()  # (key, session) sent, in the order their answers come
        try:
            while True:
                with self._changed:
                    if not flight and (not self._pending or self._stopped):
                        retired = self._retire()  # in the same breath: warm() starts another
                        break
                    taken = self._taken(IN_FLIGHT - len(flight))
                gone = False
                for key, session in taken:
                    sent = self._send(process, session)
                    if sent is None:  # the worker is gone: these go back to the server
                        gone = True
                    if sent:
                        flight.append((key, session))
                    else:
                        self._done(key)
                if gone:
                    break
                if flight:
                    key, session = flight.popleft()
                    try:
                        if not self._answered(process, session):
                            break
                    finally:
                        self._done(key)
        finally:
            for key, _ in flight:
                self._done(key)
            if not retired:
                with self._changed:
                    self._retire()
            _close(process)
            with self._changed:
                self._processes.remove(process)

    def _taken(self, count: int) -> list:
        """Up to `count` queued sessions, first in line first, marked busy (called locked)."""
        taken = []
        while len(taken) < count and self._pending and not self._stopped:
            key, session = self._pending.popitem(last=False)
            self._busy.add(key)
            taken.append((key, session))
        return taken

    def _retire(self) -> bool:
        self._running -= 1
        self._changed.notify_all()
        return True

    def _done(self, key: str) -> None:
        with self._changed:
            self._busy.discard(key)
            self._changed.notify_all()

    def _send(self, process: subprocess.Popen, session: Session) -> bool | None:
        """True when the worker has the session; False for a session this protocol cannot
        carry (the server renders it); None when the worker is gone."""
        try:
            request = orjson.dumps([session.to_cache(), session.short_id]) + b"\n"
        except TypeError:
            return False
        try:
            process.stdin.write(request)
            process.stdin.flush()
            return True
        except Exception as exc:  # a broken pipe: that worker is done
            self._said(exc)
            return None

    def _answered(self, process: subprocess.Popen, session: Session) -> bool:
        """The worker's answer for `session`, recorded; False when the worker is gone (or
        misbehaved)."""
        try:
            answer = process.stdout.readline()
            if not answer:
                return False
            facts = orjson.loads(answer)
            if facts is not None:
                self._record(session, facts)
            return True
        except Exception as exc:  # a garbled answer: that worker is done
            self._said(exc)
            return False

    def _said(self, exc: Exception) -> None:
        if not self._stopped:
            print(f"trajectoriz: a renderer failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def _close(process: subprocess.Popen) -> None:
    try:
        process.stdin.close()
    except OSError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    process.stdout.close()


def run_worker(env) -> int:
    """`trajectoriz memory-worker`: render the sessions named on stdin (one JSON line each:
    the session's cache form and its short id) into the document cache, answering each with a
    JSON line of its totals (`null` when it could not be rendered), until stdin ends. stdout
    carries only the answers: anything printed meanwhile goes to stderr."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when workers stop
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin.buffer:
        values, short_id = orjson.loads(line)
        session = Session.from_cache(values)
        session.short_id = short_id
        try:
            facts = views.fresh_totals(session, env)
        except Exception as exc:  # the mount renders it itself, and reports
            print(f"trajectoriz: warm-up of {short_id} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            facts = None
        answers.write(orjson.dumps(facts) + b"\n")
        answers.flush()
    return 0
