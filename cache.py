"""trajectoriz's own small caches, under `${XDG_CACHE_HOME:-~/.cache}/trajectoriz`.

Every entry is keyed by the fingerprint (size and mtime) of the native files it was computed
from, so a cache can be stale only in what it skips, never in what it serves. Files are written
atomically (temporary file, then rename): concurrent commands may lose an update, never corrupt
the cache. A cache that cannot be read or written is simply not used.
"""

from __future__ import annotations

import marshal
import os
import sys

from agents.base import home

# The catalog's index of discovered sessions (marshal: its format is the interpreter's).
INDEX_FILE = f"index-v2-py{sys.version_info[0]}{sys.version_info[1]}.bin"


def cache_dir(env) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(home(env), ".cache")
    return os.path.join(base, "trajectoriz")


def fingerprint(paths) -> list:
    """[size, mtime_ns] per path (None for a missing one): changes whenever the content may have."""
    return fingerprint_of(stats(paths))


def stats(paths, memo: dict | None = None) -> list:
    """os.stat of each path, None for a missing one. With `memo` (path -> result), a file that
    many sources depend on (a project's shared side file) is asked about once."""
    found = []
    for path in paths:
        if memo is not None and path in memo:
            found.append(memo[path])
            continue
        try:
            result = os.stat(path)
        except OSError:
            result = None
        if memo is not None:
            memo[path] = result
        found.append(result)
    return found


def fingerprint_of(stat_results: list) -> list:
    return [[st.st_size, st.st_mtime_ns] if st is not None else None for st in stat_results]


def _decode(name: str, data: bytes):
    """A `.bin` cache is marshal (the index, read by every command: marshal needs no import and
    reads it twice as fast as JSON; its name carries the Python version, whose format it is);
    any other is JSON."""
    if name.endswith(".bin"):
        return marshal.loads(data)
    import orjson

    return orjson.loads(data)


def _encode(name: str, value) -> bytes:
    if name.endswith(".bin"):
        return marshal.dumps(value)
    import orjson

    return orjson.dumps(value)


def load(env, name: str) -> dict:
    try:
        with open(os.path.join(cache_dir(env), name), "rb") as handle:
            data = _decode(name, handle.read())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, EOFError, TypeError):
        return {}


_shared: dict = {}  # path -> ((path, size, mtime_ns), parsed): one entry per cache file


def load_shared(env, name: str) -> dict:
    """`load`, parsed once per process while the file does not change, for callers that only
    read it: discovery and the search for per-project stores both read the index, and the mount
    rediscovers every few seconds. Never modify what it returns."""
    path = os.path.join(cache_dir(env), name)
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = (path, st.st_size, st.st_mtime_ns)
    found = _shared.get(path)
    if found is None or found[0] != key:
        found = (key, load(env, name))
        _shared[path] = found
    return found[1]


def save(env, name: str, data: dict) -> None:
    import tempfile  # here only: a warm run saves nothing, and tempfile costs ~10 ms to import

    directory = cache_dir(env)
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(_encode(name, data))
        os.replace(tmp, os.path.join(directory, name))
    except (OSError, TypeError, ValueError):
        if tmp and os.path.exists(tmp):
            os.remove(tmp)
