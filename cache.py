"""trajectoriz's own small caches, under `${XDG_CACHE_HOME:-~/.cache}/trajectoriz`.

Every entry is keyed by the fingerprint (size and mtime) of the native files it was computed
from, so a cache can be stale only in what it skips, never in what it serves. Files are written
atomically (temporary file, then rename): concurrent commands may lose an update, never corrupt
the cache. A cache that cannot be read or written is simply not used.
"""

from __future__ import annotations

import os

import orjson

from agents.base import home


def cache_dir(env) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(home(env), ".cache")
    return os.path.join(base, "trajectoriz")


def fingerprint(paths) -> list:
    """[size, mtime_ns] per path (None for a missing one): changes whenever the content may have."""
    return fingerprint_of(stats(paths))


def stats(paths) -> list:
    """os.stat of each path, None for a missing one."""
    found = []
    for path in paths:
        try:
            found.append(os.stat(path))
        except OSError:
            found.append(None)
    return found


def fingerprint_of(stat_results: list) -> list:
    return [[st.st_size, st.st_mtime_ns] if st is not None else None for st in stat_results]


def load(env, name: str) -> dict:
    try:
        with open(os.path.join(cache_dir(env), name), "rb") as handle:
            data = orjson.loads(handle.read())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
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
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(data))
        os.replace(tmp, os.path.join(directory, name))
    except (OSError, TypeError):
        pass
