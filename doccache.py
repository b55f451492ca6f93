"""Rendered documents kept on disk, so that what did not change is never translated twice.

A warm `grep -r` over the mount, `show` or `search --content` then reads a file instead of
parsing the native store again (translation runs at tens of MB/s per core; reading a cached
document at hundreds). Only redacted renderings are kept (secrets as recorded never land in the
cache), each under a name derived from everything its bytes depend on: the session's key and
short id, and the stamp (`documents.cache_stamp`: native files' fingerprint, translator and
trajectoriz versions). A changed session gets a new name; the old file ages out.

The folder is bounded (`LIMIT_BYTES`): when a write takes it over, the least recently used
files go (a hit refreshes its file's mtime). Writes are atomic (temporary file, then rename), so
concurrent processes (the pool's workers, a mount and a command) never read a partial file.
Every failure to read or write is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import os

import orjson

import cache

FOLDER = "documents-v1"
LIMIT_BYTES = 2 * 1024 ** 3
_known_total: dict = {}  # folder -> bytes this process believes it holds


def folder(env) -> str:
    return os.path.join(cache.cache_dir(env), FOLDER)


def path_of(env, key: str, short_id: str, stamp: list) -> str:
    name = hashlib.sha256(orjson.dumps([key, short_id, stamp])).hexdigest()[:40]
    return os.path.join(folder(env), name + ".json")


def get(env, key: str, short_id: str, stamp: list) -> bytes | None:
    path = path_of(env, key, short_id, stamp)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        os.utime(path)  # recently used: evicted last
    except OSError:
        return None
    return data


def put(env, key: str, short_id: str, stamp: list, data: bytes) -> None:
    path = path_of(env, key, short_id, stamp)
    directory = os.path.dirname(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    total = _known_total.get(directory)
    total = _scan_total(directory) if total is None else total + len(data)
    _known_total[directory] = evict(directory, LIMIT_BYTES, path) if total > LIMIT_BYTES else total


def _scan_total(directory: str) -> int:
    try:
        with os.scandir(directory) as entries:
            return sum(e.stat().st_size for e in entries if e.name.endswith(".json"))
    except OSError:
        return 0


def evict(directory: str, limit: int, keep: str) -> int:
    """Delete the least recently used files (never `keep`, the one just written) until the
    folder holds 90% of `limit`; the bytes left."""
    try:
        with os.scandir(directory) as entries:
            files = [(e.stat().st_mtime_ns, e.stat().st_size, e.path) for e in entries if e.name.endswith(".json")]
    except OSError:
        return 0
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= limit * 0.9:
            break
        if path == keep:
            continue
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass
    return total
