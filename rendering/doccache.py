"""Rendered documents kept on disk, so that what did not change is never translated twice.

A warm `grep -r` over the mount, `show` or `search --content` then reads a file instead of
parsing the native store again (translation runs at tens of MB/s per core; reading a cached
document at hundreds). Only redacted renderings are kept (secrets as recorded never land in the
cache), each under a name derived from everything its bytes depend on: the session's key and
short id, and the stamp (`documents.cache_stamp`: native files' fingerprint, translator and
trajectoriz versions). A changed session gets a new name; the old file ages out.

Next to a document may sit files derived from it, under the same name with another suffix
(`SUFFIXES`: `search` keeps its searchable text there). A document and its side files are one
entry: they count together against the bound and are evicted together.

The folder is bounded (`LIMIT_BYTES`): when a write takes it over, the least recently used
entries go (a hit refreshes its file's mtime, unless that is only minutes old, and an entry is as
recent as its newest file). Writes are atomic (temporary file, then rename), so
concurrent processes (the pool's workers, a mount and a command) never read a partial file.
Every failure to read or write is a miss, never an error.
"""

from __future__ import annotations

import os
import time

from core import cache
from core.hashes import sha256
from core.jsonlib import orjson

FOLDER = cache.named("documents-v3")  # older ones hold documents redacted by older rules (cache.is_obsolete)
LIMIT_BYTES = 2 * 1024 ** 3
COMPRESSED = ".zst"  # the document compressed as a push sends it (sharing/push.py)
SUFFIXES = (".json", ".search", COMPRESSED, ".card", ".transcript")  # the document, its searchable text,
# compressed, and the views memory/ shows beside it (rendering/views.py)
REFRESH_AFTER = 600  # seconds: a hit refreshes an mtime older than this (not every read writes the inode)
_known_total: dict = {}  # folder -> bytes this process believes it holds


def folder(env) -> str:
    return os.path.join(cache.cache_dir(env), FOLDER)


def path_of(env, key: str, short_id: str, stamp: list, suffix: str = ".json", base: str | None = None) -> str:
    """`base`: the cache folder, when the caller has it (`cache.cache_dir`)."""
    material = orjson.dumps([short_id, stamp]) + b"\0" + key.encode("utf-8", "surrogatepass")  # a path need not be UTF-8
    name = sha256(material).hexdigest()[:40]
    return os.path.join(base or cache.cache_dir(env), FOLDER, name + suffix)


def get(env, key: str, short_id: str, stamp: list, suffix: str = ".json", base: str | None = None) -> bytes | None:
    """The file's bytes, read without Python's file objects (a repeated `search --content`
    reads thousands of them). `base`: the cache folder (`cache.cache_dir`), when the caller
    has it."""
    base = base or cache.cache_dir(env)
    if not cache.usable(base):
        return None
    path = path_of(env, key, short_id, stamp, suffix, base)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        data = _read(fd, found.st_size)
        if time.time() - found.st_mtime > REFRESH_AFTER:
            os.utime(path)  # recently used: evicted last
    except OSError:
        return None
    finally:
        os.close(fd)
    return data


def _read(fd: int, size: int) -> bytes:
    data = os.read(fd, size)
    while len(data) < size:  # a read may return less than asked for
        more = os.read(fd, size - len(data))
        if not more:
            break
        data += more
    return data


def has(env, key: str, short_id: str, stamp: list, suffix: str = ".json") -> bool:
    return os.path.exists(path_of(env, key, short_id, stamp, suffix))


def put(env, key: str, short_id: str, stamp: list, data: bytes, suffix: str = ".json") -> None:
    if not cache.usable(cache.cache_dir(env)):
        return
    path = path_of(env, key, short_id, stamp, suffix)
    directory = os.path.dirname(path)
    try:
        cache.write_private(path, data)
    except OSError:
        return
    total = _known_total.get(directory)
    total = _scan_total(directory) if total is None else total + len(data)
    _known_total[directory] = evict(directory, LIMIT_BYTES, path) if total > LIMIT_BYTES else total


def _scan_total(directory: str) -> int:
    return sum(size for _, size, _ in _entries(directory))


def _entries(directory: str) -> list[tuple[int, int, list[str]]]:
    """(newest mtime, bytes, paths) of each entry: a document and its side files."""
    found: dict = {}
    try:
        with os.scandir(directory) as listing:
            for item in listing:
                if item.name.endswith(SUFFIXES):
                    st = item.stat()
                    entry = found.setdefault(item.name.split(".", 1)[0], [0, 0, []])
                    entry[0] = max(entry[0], st.st_mtime_ns)
                    entry[1] += st.st_size
                    entry[2].append(item.path)
    except OSError:
        return []
    return [tuple(entry) for entry in found.values()]


def evict(directory: str, limit: int, keep: str) -> int:
    """Delete the least recently used entries (never the one of `keep`, the file just written)
    until the folder holds 90% of `limit`; the bytes left."""
    entries = _entries(directory)
    total = sum(size for _, size, _ in entries)
    for _, size, paths in sorted(entries):
        if total <= limit * 0.9:
            break
        if keep in paths:
            continue
        try:
            for path in paths:
                os.unlink(path)
        except OSError:
            continue  # still there, at least in part: its bytes still count
        total -= size
    return total
