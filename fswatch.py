"""What a listing of the agents' stores looked at, so that a few stats can tell later that it
would come out the same.

While `watching(witness)` is active in a thread, the directory listings, stats, readlinks and
reads that thread makes through `os` and `open` are noted in the witness (other threads are
not: the mount serves requests while its rescan thread discovers):
- a directory listed: its inode and mtime (an entry added, removed or renamed changes the
  mtime; an append to a file in it does not, which is why the files themselves are not noted);
- a path stat'ed (or lstat'ed, or read as a link): its inode and type, or that it is missing;
  not when the directory it is in was listed (its mtime says already whether the entry is
  there), nor a missing one whose nearest existing ancestor was (the path cannot appear
  before an entry is added there): a transcript's side folder asked about beside each of
  thousands of transcripts costs nothing to check again;
- a file read: its inode, size and mtime (its content may be what was decided on).
`holds(witness)` stats each of them again. An mtime too recent to rely on (the file system's
timestamps are coarse: a change in the same tick as the listing would leave it as it was) is
noted as unknown, which never holds: the next listing is made again, and noted afresh.

Trajectoriz's own cache folder is left out (`ignored`): a listing may read the index the
previous discovery wrote, which changes with every discovery. So are the kernel's files (the
mount table, which discovery checks apart: `mounts.avoided`).
"""

from __future__ import annotations

import builtins
import os
import stat
import threading
import time
from collections.abc import Mapping

RACY_NS = 2_000_000_000  # an mtime this close to the moment it was read may not have ticked since
KERNEL = ("/proc", "/sys", "/dev")  # not stores (the mount table, read by mounts.avoided, is checked apart)


class Witness:
    """What was seen: directories listed (path -> (inode, mtime_ns), None for an mtime too
    recent to rely on), paths asked about ((follows symlinks, path) -> (inode, type) or None
    for a missing one, with the directory that covers it) and files read (path -> (inode,
    size, mtime_ns))."""

    def __init__(self, ignored: tuple = ()):
        self.listed: dict = {}
        self.probes: dict = {}
        self.files: dict = {}
        self._above: dict = {}  # directory -> its nearest existing one at or above (asked once)
        self._ignored = tuple(os.path.join(p, "") for p in (*ignored, *KERNEL))

    def spoil(self) -> None:
        """Make this witness never hold (what it saw went wrong: look again next time)."""
        self.listed[""] = None

    def state(self) -> list:
        """What `holds` compares, as plain data (for a cache file)."""
        probes = [(key, found) for key, (found, cover) in self.probes.items() if cover not in self.listed]
        return [sorted(self.listed.items()), sorted(probes), sorted(self.files.items())]

    def _listed(self, path) -> None:
        path = self._wanted(path)
        if path is not None and path not in self.listed:
            found = _dir_state(path)
            if found is False:  # not a directory: listing it failed as asking about it would
                try:
                    self._probed(path, True, _stat(path))
                except (OSError, ValueError):
                    self._probed(path)
            else:
                self.listed[path] = found

    def _probed(self, path, follow: bool = True, found=None) -> None:
        """`path` was asked about (`found`: the stat result the call got, None when it failed)."""
        path = self._wanted(path)
        if path is None or (follow, path) in self.probes:
            return
        if found is None:
            self.probes[follow, path] = (None, self._ancestor(os.path.dirname(path)))
        else:
            self.probes[follow, path] = ((found.st_ino, stat.S_IFMT(found.st_mode)), os.path.dirname(path))

    def _lprobed(self, path) -> None:
        """A link read: the link itself, as lstat sees it."""
        try:
            found = _lstat(path)
        except (OSError, ValueError, TypeError):
            found = None
        self._probed(path, False, found)

    def _ancestor(self, path: str) -> str:
        """The nearest existing directory at or above `path`."""
        walked = []
        while path not in self._above and path not in self.listed and _dir_state(path) is False \
                and path != os.path.dirname(path):
            walked.append(path)
            path = os.path.dirname(path)
        found = self._above.setdefault(path, path)
        self._above.update(dict.fromkeys(walked, found))
        return found

    def _read(self, path) -> None:
        path = self._wanted(path)
        if path is None or path in self.files:
            return
        try:
            st = _stat(path)
            self.files[path] = (st.st_ino, st.st_size, _trusted(st.st_mtime_ns))
        except (OSError, ValueError):
            self._probed(path)  # missing: what would create it

    def _wanted(self, path) -> str | None:
        """The absolute path asked about; None for one not noted (a descriptor, an ignored one)."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return None
        path = os.path.abspath(path)
        return None if path.startswith(self._ignored) else path


def holds(state: list) -> bool:
    """Whether everything of a `Witness.state()` is as it was seen."""
    listed, probes, files = state
    if not all(seen is not None and _dir_state(path) == seen for path, seen in listed):
        return False
    for (follow, path), seen in probes:
        try:
            st = _stat(path) if follow else _lstat(path)
        except (OSError, ValueError):
            if seen is not None:
                return False
            continue
        if seen is None or (st.st_ino, stat.S_IFMT(st.st_mode)) != tuple(seen):
            return False
    for path, seen in files:
        try:
            st = _stat(path)
        except (OSError, ValueError):
            return False
        if seen[2] is None or (st.st_ino, st.st_size, st.st_mtime_ns) != tuple(seen):
            return False
    return True


def paths(state: list) -> list[str]:
    """Every path a witness state depends on."""
    return [path for path, _ in state[0]] + [path for (_, path), _ in state[1]] + [path for path, _ in state[2]]


def merged(states: list) -> list:
    """One state holding all of `states`."""
    return [[item for state in states for item in state[part]] for part in range(3)]


def _trusted(mtime_ns: int) -> int | None:
    return None if time.time_ns() - mtime_ns < RACY_NS else mtime_ns


def _dir_state(path: str):
    """(inode, mtime_ns) of a directory, None when its mtime is too recent to rely on; False
    when there is none (missing, or not a directory)."""
    try:
        st = _stat(path)
    except (OSError, ValueError):
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    mtime = _trusted(st.st_mtime_ns)
    return None if mtime is None else (st.st_ino, mtime)


class ReadEnv(Mapping):
    """An environment that notes the variables read from it (`read`: name -> value, None for
    one that is not set); iterating it reads them all."""

    def __init__(self, env):
        self._env = env
        self.read: dict = {}

    def __getitem__(self, name):
        self.read[name] = self._env.get(name)
        return self._env[name]

    def get(self, name, default=None):
        self.read[name] = self._env.get(name)
        return self._env.get(name, default)

    def __contains__(self, name) -> bool:
        self.read[name] = self._env.get(name)
        return name in self._env

    def __iter__(self):
        self.read.update(self._env)
        return iter(self._env)

    def __len__(self) -> int:
        return len(self._env)


def same_env(read: dict, env) -> bool:
    """Whether `env` has the values a ReadEnv noted."""
    return all(env.get(name) == value for name, value in read.items())


# recording -------------------------------------------------------------------------------------
_stat, _lstat, _listdir, _scandir, _readlink, _os_open, _open = (
    os.stat, os.lstat, os.listdir, os.scandir, os.readlink, os.open, builtins.open)
_current = threading.local()
_installed = [0]
_lock = threading.Lock()


class watching:
    """`with watching(witness):` notes this thread's file system calls in `witness`."""

    def __init__(self, witness: Witness):
        self.witness = witness

    def __enter__(self) -> Witness:
        self._outer = getattr(_current, "witness", None)
        _current.witness = self.witness
        with _lock:
            if not _installed[0]:
                _install()
            _installed[0] += 1
        return self.witness

    def __exit__(self, *exc) -> None:
        _current.witness = self._outer
        with _lock:
            _installed[0] -= 1
            if not _installed[0]:
                _uninstall()


def _noting(kind: str, original):
    def call(path=".", *args, **kwargs):
        witness = getattr(_current, "witness", None)
        if witness is not None and not kwargs.get("dir_fd"):
            getattr(witness, kind)(path)
        return original(path, *args, **kwargs)
    return call


def _noting_stat(original, follow: bool):
    """A stat noted with its own result (one call, not two)."""
    def call(path, *args, **kwargs):
        witness = getattr(_current, "witness", None)
        if witness is None or kwargs.get("dir_fd") or args:
            return original(path, *args, **kwargs)
        follows = follow and kwargs.get("follow_symlinks", True)
        try:
            found = original(path, **kwargs)
        except (OSError, ValueError):
            witness._probed(path, follows)
            raise
        witness._probed(path, follows, found)
        return found
    return call


def _noting_open(original, read_only):
    def call(file, *args, **kwargs):
        witness = getattr(_current, "witness", None)
        if witness is not None and read_only(*args, **kwargs):
            witness._read(file)
        return original(file, *args, **kwargs)
    return call


def _reads_mode(mode="r", *args, **kwargs) -> bool:
    return not any(flag in mode for flag in "wax+")


def _reads_flags(flags, *args, **kwargs) -> bool:
    return flags & (os.O_WRONLY | os.O_RDWR) == 0


def _install() -> None:
    os.stat, os.lstat = _noting_stat(_stat, True), _noting_stat(_lstat, False)
    os.readlink = _noting("_lprobed", _readlink)
    os.listdir, os.scandir = _noting("_listed", _listdir), _noting("_listed", _scandir)
    os.open = _noting_open(_os_open, _reads_flags)
    builtins.open = _noting_open(_open, _reads_mode)


def _uninstall() -> None:
    os.stat, os.lstat, os.readlink, os.listdir, os.scandir = _stat, _lstat, _readlink, _listdir, _scandir
    os.open, builtins.open = _os_open, _open
