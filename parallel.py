"""Work over many sessions on every core: `search --content`, `stats`, `list --steps`, `agents`
and `export` translate sessions (and discovery scans sources) in a process pool and get their
results back in the sessions' order.

Workers return small results (hits, totals), never documents, so memory stays bounded however
many sessions there are. The items themselves reach the workers once, when they start
(inherited through fork), and each task names items by their positions: thousands of sessions
are not pickled on the way. Ctrl-C belongs to the parent: workers ignore SIGINT, and the pool
is torn down when the parent stops reading, however it stops (end, error, interrupt, broken
pipe).
"""

from __future__ import annotations

import marshal
import os
import signal
import sys
import time

_work: tuple = ()  # a worker's (function, items, context)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def ordered(function, items: list, context: tuple = (), workers: int | None = None):
    """`function(item, *context)` for every item, yielded in the items' order as soon as each
    result (and every one before it) is ready. `function` must be a module-level function."""
    workers = min(workers or cores(), len(items))
    pool = _pool(workers, function, items, context) if workers > 1 else None
    if pool is None:
        for item in items:
            yield function(item, *context)
        return
    try:
        yield from pool.imap(_call, range(len(items)), chunksize=chunk_size(len(items), workers))
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def _pool(workers: int, function, items: list, context: tuple):
    """A pool of `workers` processes; None where none can be made (the pool's locks live in
    /dev/shm, which a sandbox may leave out or read-only): the work is then done here."""
    import multiprocessing  # here: `in_two` needs none of it

    methods = multiprocessing.get_all_start_methods()
    start = multiprocessing.get_context("fork" if "fork" in methods else None)
    try:
        return start.Pool(workers, _start_worker, (function, items, context))
    except (OSError, ImportError):
        return None


def chunk_size(count: int, workers: int) -> int:
    """Items per task: enough to amortize the round trip to a worker (a session can take less
    than a millisecond), few enough that results keep streaming and the cores stay balanced."""
    return max(1, min(32, count // (workers * 8)))


def _start_worker(function, items: list, context: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the pool
    global _work
    _work = function, items, context


def _call(position: int):
    function, items, context = _work
    return function(items[position], *context)


class Shared:
    """A number >= 0 the parent sets and the pool's workers read, e.g. how far the parent got:
    a hint, as a worker may read it late or, rarely, torn. Shared memory inherited through
    fork; in a worker started otherwise it reads 0."""

    def __init__(self):
        import mmap

        self._memory = mmap.mmap(-1, 8)

    def __reduce__(self):
        return Shared, ()

    @property
    def value(self) -> int:
        return int.from_bytes(self._memory[:8], "little")

    @value.setter
    def value(self, number: int) -> None:
        self._memory[:8] = number.to_bytes(8, "little")


class Progress:
    """`label: done/total` on stderr, redrawn at most ten times a second, only when stderr is
    a terminal (a script reading stderr gets no carriage returns)."""

    def __init__(self, total: int, label: str):
        self.total = total
        self.label = label
        self.done = 0
        self.shown = 0.0
        self.active = sys.stderr.isatty() and total > 0

    def step(self, note: str = "") -> None:
        self.done += 1
        now = time.monotonic()
        if self.active and (now - self.shown >= 0.1 or self.done == self.total):
            self.shown = now
            sys.stderr.write(f"\r\x1b[K{self.label}: {self.done}/{self.total} session(s){note}")
            sys.stderr.flush()

    def clear(self) -> None:
        if self.active:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def in_two(function, items: list, context: tuple = ()) -> list:
    """`function(item, *context)` of every item, in order: the second half in one forked child
    while this process does the first. For work of tens of milliseconds, where starting a pool
    costs as much as it saves. The results come back marshalled (plain values: lists, dicts,
    strings, numbers). The half is done here when no child can be made or it fails (a result
    marshal cannot write included); `function` must not need threads (none survive a fork)."""
    half = len(items) // 2
    try:
        reader, writer = os.pipe()
        pid = os.fork()
    except OSError:
        return [function(item, *context) for item in items]
    if pid == 0:
        _child(reader, writer, function, items[half:], context)
    os.close(writer)
    with os.fdopen(reader, "rb") as handle:
        try:
            mine = [function(item, *context) for item in items[:half]]
            data = handle.read()
        except BaseException:
            os.kill(pid, signal.SIGKILL)
            raise
        finally:
            status = os.waitpid(pid, 0)[1]
    if status != 0:
        return mine + [function(item, *context) for item in items[half:]]
    return mine + marshal.loads(data)


def _child(reader: int, writer: int, function, items: list, context: tuple) -> None:
    """The child of `in_two`: its results, marshalled, on `writer`; it never returns."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.close(reader)
        data = marshal.dumps([function(item, *context) for item in items])
        with os.fdopen(writer, "wb") as handle:
            handle.write(data)
        code = 0
    finally:
        os._exit(code)
