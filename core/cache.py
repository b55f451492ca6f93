"""trajectoriz's own small caches, under `${XDG_CACHE_HOME:-~/.cache}/trajectoriz`.

Every entry is keyed by the fingerprint (size and mtime) of the native files it was computed
from, so a cache can be stale only in what it skips, never in what it serves. Files are written
atomically (temporary file, then rename): concurrent commands may lose an update, never corrupt
the cache. A cache that cannot be read or written is simply not used.

Everything trajectoriz writes is private: folders are created 0700 (every missing level, the
user's ~/.cache included when trajectoriz is the one creating it), files 0600. A cache folder
found with wider modes (an older release, a umask of 022) is tightened the first time a process
looks at it; one owned by another user (XDG_CACHE_HOME in a shared /tmp) is never used.
"""

from __future__ import annotations

import gc
import marshal
import os
import stat
import sys

from core.version import RULES


# The caches that hold redacted text, each named `<family>-v<format>-r<rules>[-py<X><Y>][.ext]`.
FAMILIES = ("index-v", "documents-v", "facts-v", "catalog-v")


def named(family: str, python: bool = False, ext: str = "") -> str:
    """The name of a cache of `family` ("index-v4") under the current redaction rules, with
    the Python version where its format is the interpreter's (marshal)."""
    tag = f"-py{sys.version_info[0]}{sys.version_info[1]}" if python else ""
    return f"{family}-r{RULES}{tag}{ext}"


def is_obsolete(name: str) -> bool:
    """A cache of a family that holds redacted text, made under other rules than these (or
    before caches were named after them: index-v1 to v5, documents-v1 to v3, facts-v1 to v5,
    catalog-v1 and v2, some with unredacted first messages or markers that are a digest of the
    secret alone, some of older formats): what older rules let through must not survive an
    upgrade. A new format of a family is named with `named` too (a name without the rules'
    version would be removed at every start)."""
    return name.startswith(FAMILIES) and name.split(".")[0].split("-")[2:3] != [f"r{RULES}"]


# The catalog's index of discovered sessions (marshal: its format is the interpreter's).
INDEX_FILE = named("index-v5", python=True, ext=".bin")


PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600
_checked: dict = {}  # cache folder -> whether it may be used (checked once per process)


def home(env) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def xdg_dir(env, variable: str, *default: str) -> str:
    """An XDG base directory: `$variable` when it is an absolute path, else `$HOME/<default>`
    (the XDG specification ignores a relative value: taken as it is, it would put private
    files in the current directory, inside a project, where `git add -A` commits them)."""
    value = env.get(variable)
    return value if value and os.path.isabs(value) else os.path.join(home(env), *default)


def cache_dir(env) -> str:
    base = xdg_dir(env, "XDG_CACHE_HOME", ".cache")
    path = os.path.join(base, "trajectoriz")
    if path not in _checked:
        _checked[path] = tighten(path)
    return path


def usable(path: str) -> bool:
    """Whether a cache folder may be read and written: not one another user owns."""
    if path not in _checked:
        _checked[path] = tighten(path)
    return _checked[path]


def tighten(path: str) -> bool:
    """Make an existing folder of ours owner-only, with everything in it (group and other bits
    removed, the owner's kept: the unpacked program in app/ stays executable). False when the
    folder is not ours to use: owned by another user, or not a folder."""
    if not _ancestors_trusted(path):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return True  # not there yet: make_private_dirs creates it private
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    if st.st_mode & 0o077:
        _strip_group_and_other(path)
    _remove_obsolete(path)
    return True


def _ancestors_trusted(path: str) -> bool:
    """Whether every folder above `path` (and every symlink on the way) is ours or root's:
    the owner of a folder can rename what is in it, so one of another user's
    (XDG_CACHE_HOME=/tmp/cache made by someone else first) could swap our private folder for
    a symlink after it was checked. Missing levels are fine: make_private_dirs creates them."""
    trusted = (os.getuid(), 0)
    current = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            st = os.lstat(current)
            if st.st_uid not in trusted or (stat.S_ISLNK(st.st_mode) and os.stat(current).st_uid not in trusted):
                return False
        except OSError:
            pass  # not there yet
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def _remove_obsolete(path: str) -> None:
    try:
        names = [name for name in os.listdir(path) if is_obsolete(name)]
    except OSError:
        return
    if not names:
        return
    import shutil  # here only: there is rarely anything to remove

    for name in names:
        target = os.path.join(path, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target, ignore_errors=True)
        else:
            try:
                os.unlink(target)
            except OSError:
                pass


def _strip_group_and_other(top: str) -> None:
    for folder, dirs, files in os.walk(top):
        for name in [folder, *(os.path.join(folder, n) for n in files + dirs)]:
            try:
                st = os.lstat(name)
                if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                    os.chmod(name, stat.S_IMODE(st.st_mode) & ~0o077)
            except OSError:
                pass


def make_private_dirs(path: str) -> None:
    """`os.makedirs`, every level it creates 0700 (makedirs gives the mode to the last one only).
    Raises OSError like makedirs."""
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def write_private(path: str, data: bytes) -> None:
    """Write `path` atomically (a temporary file beside it, then a rename), owner-only. Raises
    OSError; the temporary file never stays behind."""
    folder = os.path.dirname(path)
    make_private_dirs(folder)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{id(data):x}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        parallel = _parallel()  # (a child writing for a command that was killed: parallel.aside)
        if parallel is not None and parallel.orphaned():
            raise OSError(f"not kept: the command {path} was written for has ended")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class no_collection:
    """`with no_collection():` the cyclic garbage collector waits, and never walks what was made
    meanwhile (`gc.freeze`): reading a large cache makes hundreds of thousands of objects, none
    in a cycle, that live as long as the command, which it would otherwise walk again and again
    (a warm listing of 40,000 sessions spent a third of its time there). They are still freed
    when no longer referenced. A process with other threads (the mount's server, which discovers
    again every few seconds for as long as it runs; sqlite_ro's deadline watcher does not
    count) does not freeze: the cycles frozen with each discovery would never be collected."""

    def __enter__(self):
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if _alone():
            gc.freeze()
        if self._was:
            gc.enable()


def _parallel():
    """The parallel module when this process has loaded it (only then can it have a writer
    beside it, `parallel.aside`, or threads declared fork-safe); None otherwise: a warm command
    never loads it."""
    return sys.modules.get("core.parallel")


def _alone() -> bool:
    """`parallel.alone` (sqlite_ro's deadline watcher is no server) when that module is loaded,
    as it is wherever the watcher runs; else whether no other thread runs."""
    parallel = _parallel()
    if parallel is not None:
        return parallel.alone()
    import threading

    return threading.active_count() == 1


def settle_writers() -> None:
    """Wait for the writers `parallel.aside` started in this process, if any: before what they
    write is read or removed."""
    parallel = _parallel()
    if parallel is not None:
        parallel.settle()


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


NS_LIMIT = 2 ** 63 - 1  # a fingerprint is stored as JSON too (orjson: 64-bit integers only)


def fingerprint_of(stat_results: list) -> list:
    """[size, mtime_ns] per stat result; an mtime past 2262 (any file's mtime can be set so, and
    tmpfs and btrfs hold any) is cut to the signed 64-bit range."""
    return [[st.st_size, max(-NS_LIMIT, min(st.st_mtime_ns, NS_LIMIT))] if st is not None else None
            for st in stat_results]


def _decode(name: str, data: bytes):
    """A `.bin` cache is marshal (the index, read by every command: marshal needs no import and
    reads it twice as fast as JSON; its name carries the Python version, whose format it is);
    any other is JSON."""
    if name.endswith(".bin"):
        return marshal.loads(data)
    from core.jsonlib import orjson

    return orjson.loads(data)


KEPT_MARSHAL = 2  # the marshal version of what is kept (`kept_bytes`)


def kept_bytes(value) -> bytes:
    """`value` marshalled so that its bytes depend on the value alone. From version 3 on,
    marshal flags every object whose reference count is above one (so that a later occurrence
    can point back to it), and writes interned strings as their own type: both depend on what
    else in the process holds the object (a memo, a frame, the interpreter), so the index or a
    snapshot written in the process and by a forked child (`parallel.aside`) came out as other
    bytes for the same value whenever a FUSE mount was recorded in it. Version 2 writes neither
    (about a fifth more bytes; a 40,000-session snapshot reads ~15 % slower)."""
    return marshal.dumps(value, KEPT_MARSHAL)


def _encode(name: str, value) -> bytes:
    if name.endswith(".bin"):
        return kept_bytes(value)
    from core.jsonlib import orjson

    return orjson.dumps(value)


def load(env, name: str) -> dict:
    directory = cache_dir(env)
    if not usable(directory):
        return {}
    try:
        with open(os.path.join(directory, name), "rb") as handle, no_collection():
            data = _decode(name, handle.read())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, EOFError, TypeError):
        return {}


_shared: dict = {}  # path -> ((path, inode, size, mtime_ns), parsed): one entry per cache file


def load_shared(env, name: str) -> dict:
    """`load`, parsed once per process while the file does not change, for callers that only
    read it: discovery and the search for per-project stores both read the index, and the mount
    rediscovers every few seconds. Never modify what it returns."""
    path = os.path.join(cache_dir(env), name)
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    found = _shared.get(path)
    if found is None or found[0] != key:
        found = (key, load(env, name))
        _shared[path] = found
    return found[1]


def save(env, name: str, data: dict) -> None:
    directory = cache_dir(env)
    if not usable(directory):
        return
    try:
        write_private(os.path.join(directory, name), _encode(name, data))
    except (OSError, TypeError, ValueError):
        pass
