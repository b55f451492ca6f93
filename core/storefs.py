"""How the agents read their stores, and what a listing looked at, so that a few stats can tell
later that it would come out the same.

Every agent module reads its store through the functions below (`stat`, `lstat`, `listdir`,
`scandir`, `readlink`, `open_read`, the `os.path`-like tests, `glob`, `realpath`) rather than
through `os`, `glob` and `open`: they do what those do and, while `watching(witness)` is active
in the calling thread, note each call in the witness (other threads are not noted: the mount
serves requests while its rescan thread discovers). Nothing of `os` or `builtins` is replaced:
a call that does not go through here is simply not noted.
- a directory listed: its inode and mtime (an entry added, removed or renamed changes the
  mtime; an append to a file in it does not, which is why the files themselves are not noted);
- a path stat'ed (or lstat'ed, or read as a link): its inode and type, or that it is missing;
  not when the directory it is in was listed (its mtime says already whether the entry is
  there), nor a missing one whose nearest existing ancestor was (the path cannot appear
  before an entry is added there): a transcript's side folder asked about beside each of
  thousands of transcripts costs nothing to check again. A path followed through a link is
  noted all the same (the folder's mtime does not change when the link's target does), and so
  is a link among a listing's entries whose `is_dir`, `is_file` or `stat` follows it;
- a file read: its inode, size and mtime (its content may be what was decided on).
`holds(witness)` stats each of them again. An mtime too recent to rely on (the file system's
timestamps are coarse: a change in the same tick as the listing would leave it as it was) is
noted as unknown, which never holds: the next listing is made again, and noted afresh. The
same rule makes the order safe: a directory is noted just before it is listed, a file just
before it is opened, a link's path before `realpath` follows it (a change in between shows as
another inode, size or mtime, or one too recent to rely on); a path from the very stat that
answered the call.

Trajectoriz's own cache folder is left out (`ignored`): a listing may read the index the
previous discovery wrote, which changes with every discovery. So are the kernel's files (the
mount table, which discovery checks apart: `mounts.avoided`).
"""

from __future__ import annotations

import fnmatch
import glob as _glob_module
import os
import stat as _stat
import threading
import time
from collections.abc import Mapping

RACY_NS = 2_000_000_000  # an mtime this close to the moment it was read may not have ticked since
KERNEL = ("/proc", "/sys", "/dev")  # not stores (the mount table, read by mounts.avoided, is checked apart)
MAX_LINKS = 40  # as the kernel's own bound on symlinks followed in one lookup


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
        """What `holds` compares, as plain data (for a cache file). A probe a listed folder
        covers is left out, but for one that followed a link (`_covered`: asked here, of those
        few; an entry that was a link and is no more changed its folder's mtime)."""
        probes = [(key, found) for key, (found, cover) in self.probes.items() if not self._covered(key, cover)]
        return [sorted(self.listed.items()), sorted(probes), sorted(self.files.items())]

    def _covered(self, key: tuple, cover) -> bool:
        """Whether a probe is told by the listed folder `cover`: not when a link lies between
        them that the probe followed."""
        if cover not in self.listed:
            return False
        follow, path = key
        while follow and path != cover and path != os.path.dirname(path):
            if _is_link(path):
                return False
            path = os.path.dirname(path)
        return True

    def _listed(self, path) -> None:
        path = self._wanted(path)
        if path is not None and path not in self.listed:
            found = _dir_state(path)
            if found is False:  # not a directory: listing it failed as asking about it would
                try:
                    self._probed(path, True, os.stat(path))
                except (OSError, ValueError):
                    self._probed(path)
            else:
                self.listed[path] = found

    def _probed(self, path, follow: bool = True, found=None, link: bool = False) -> None:
        """`path` was asked about (`found`: the stat result the call got, None when it failed;
        `link`: followed through the link it is, covered by no folder)."""
        path = self._wanted(path)
        if path is None or (follow, path) in self.probes:
            return
        if link:
            cover = None
        else:
            cover = self._ancestor(os.path.dirname(path)) if found is None else os.path.dirname(path)
        self.probes[follow, path] = (None if found is None else (found.st_ino, _stat.S_IFMT(found.st_mode)), cover)

    def _lprobed(self, path) -> None:
        """A link read: the link itself, as lstat sees it."""
        try:
            found = os.lstat(path)
        except (OSError, ValueError, TypeError):
            found = None
        self._probed(path, False, found)

    def _ancestor(self, path: str) -> str | None:
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
            st = os.stat(path)
            self.files[path] = (st.st_ino, st.st_size, _trusted(st.st_mtime_ns))
        except (OSError, ValueError):
            self._probed(path)  # missing: what would create it

    def _wanted(self, path) -> str | None:
        """The absolute path asked about; None for one not noted (a descriptor, an ignored one)."""
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
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
            st = os.stat(path) if follow else os.lstat(path)
        except (OSError, ValueError):
            if seen is not None:
                return False
            continue
        if seen is None or (st.st_ino, _stat.S_IFMT(st.st_mode)) != tuple(seen):
            return False
    for path, seen in files:
        try:
            st = os.stat(path)
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


def _is_link(path: str) -> bool:
    try:
        return _stat.S_ISLNK(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _trusted(mtime_ns: int) -> int | None:
    return None if time.time_ns() - mtime_ns < RACY_NS else mtime_ns


def _dir_state(path: str):
    """(inode, mtime_ns) of a directory, None when its mtime is too recent to rely on; False
    when there is none (missing, or not a directory)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    if not _stat.S_ISDIR(st.st_mode):
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


# reading a store -------------------------------------------------------------------------------
_current = threading.local()


class watching:
    """`with watching(witness):` notes this thread's reads through this module in `witness`."""

    def __init__(self, witness: Witness):
        self.witness = witness

    def __enter__(self) -> Witness:
        self._outer = getattr(_current, "witness", None)
        _current.witness = self.witness
        return self.witness

    def __exit__(self, *exc) -> None:
        _current.witness = self._outer


def _witness() -> Witness | None:
    return getattr(_current, "witness", None)


def stat(path, *, follow_symlinks: bool = True) -> os.stat_result:
    witness = _witness()
    if witness is None:
        return os.stat(path, follow_symlinks=follow_symlinks)
    try:
        found = os.stat(path, follow_symlinks=follow_symlinks)
    except (OSError, ValueError):
        witness._probed(path, follow_symlinks)
        raise
    witness._probed(path, follow_symlinks, found)
    return found


def lstat(path) -> os.stat_result:
    return stat(path, follow_symlinks=False)


def listdir(path=".") -> list:
    _note("_listed", path)
    return os.listdir(path)


def scandir(path="."):
    """`os.scandir`; while watching, an entry that is a link notes what its `is_dir`, `is_file`
    and `stat` follow it to (its folder's mtime does not tell)."""
    witness = _witness()
    if witness is None:
        return os.scandir(path)
    witness._listed(path)
    return _Listing(os.scandir(path), witness)


class _Listing:
    """An `os.scandir` iterator whose links are `_LinkEntry`s."""

    def __init__(self, listing, witness: Witness):
        self._listing, self._witness = listing, witness

    def __iter__(self):
        return self

    def __next__(self):
        entry = next(self._listing)
        return _LinkEntry(entry, self._witness) if entry.is_symlink() else entry

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._listing.close()

    def close(self) -> None:
        self._listing.close()


class _LinkEntry:
    """A DirEntry of a link: following it is noted in the witness."""

    def __init__(self, entry, witness: Witness):
        self._entry, self._witness = entry, witness
        self.name, self.path = entry.name, entry.path

    def __fspath__(self) -> str:
        return self.path

    def __getattr__(self, name):
        return getattr(self._entry, name)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        if not follow_symlinks:
            return self._entry.stat(follow_symlinks=False)
        try:
            found = self._entry.stat()
        except OSError:
            self._witness._probed(self.path, True, None, link=True)
            raise
        self._witness._probed(self.path, True, found, link=True)
        return found

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._is(_stat.S_ISDIR, follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self._is(_stat.S_ISREG, follow_symlinks)

    def _is(self, kind, follow_symlinks: bool) -> bool:
        if not follow_symlinks:
            return False  # a link itself is neither
        try:
            return kind(self.stat().st_mode)
        except FileNotFoundError:  # as DirEntry's: a dangling link is neither, a loop raises
            return False


def readlink(path):
    _note("_lprobed", path)
    return os.readlink(path)


def open_read(path, flags: int = 0) -> int:
    """`os.open` of a file to read (O_RDONLY with `flags`), noted as read."""
    _note("_read", path)
    return os.open(path, os.O_RDONLY | flags)


def _note(kind: str, path) -> None:
    witness = _witness()
    if witness is not None:
        getattr(witness, kind)(path)


def _tested(path, follow: bool = True) -> os.stat_result | None:
    try:
        return stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return None


def exists(path) -> bool:
    return _tested(path) is not None


def lexists(path) -> bool:
    return _tested(path, follow=False) is not None


def isfile(path) -> bool:
    found = _tested(path)
    return found is not None and _stat.S_ISREG(found.st_mode)


def isdir(path) -> bool:
    found = _tested(path)
    return found is not None and _stat.S_ISDIR(found.st_mode)


def getsize(path) -> int:
    return stat(path).st_size


def realpath(path) -> str:
    """`os.path.realpath`, noting every component it passes through, those of the links' targets
    too (a link replaced by another is another inode): a link on the way retargeted changes the
    answer."""
    if _witness() is not None:
        _walk_links(os.fspath(path))
    return os.path.realpath(path)


def _walk_links(path) -> None:
    """lstat (and readlink, through this module: noted) each component on the way `realpath`
    resolves `path`, in its order (a `..` after a link goes up from the link's target), at most
    MAX_LINKS links (a loop: what was seen of it is noted)."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    done, pending, links = os.sep, _parts(os.path.join(os.getcwd(), path)), 0
    while pending:
        part = pending.pop()
        if part == "..":
            done = os.path.dirname(done)
            continue
        candidate = os.path.join(done, part)
        found = _tested(candidate, follow=False)
        if found is None or not _stat.S_ISLNK(found.st_mode):
            done = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            return
        try:
            target = readlink(candidate)
        except (OSError, ValueError):
            return
        done = os.sep if os.path.isabs(target) else done
        pending += _parts(target)


def _parts(path: str) -> list[str]:
    """The components of `path` but `.`, last first (a stack)."""
    return [part for part in reversed(path.split(os.sep)) if part and part != "."]


def glob(pattern: str, recursive: bool = False, folders_only: bool = False) -> list[str]:
    """`glob.glob(pattern, recursive=recursive)`, through this module's listings (so noted).
    `folders_only`: the folders alone (what a pattern's head matches: a file there holds no
    match, and is not stat'ed and listed in vain)."""
    if not _glob_module.has_magic(pattern):
        wanted = isdir(pattern) if pattern.endswith(os.sep) or folders_only else lexists(pattern)
        return [pattern] if wanted else []
    head, tail = os.path.split(pattern)
    if head and head != pattern and _glob_module.has_magic(head):
        folders = glob(head, recursive, folders_only=True)
    else:
        folders = [head]
    found = []
    for folder in folders:
        if recursive and tail == "**":
            found += [os.path.join(folder, name) for name in _below(folder, folders_only)]
        elif _glob_module.has_magic(tail):
            found += [os.path.join(folder, name) for name in _matching(folder, tail, folders_only)]
        elif (isdir if folders_only or not tail else lexists)(os.path.join(folder, tail) or os.curdir):
            found.append(os.path.join(folder, tail))
    return found


def _entries(folder: str) -> list:
    try:
        with scandir(folder or os.curdir) as entries:
            return list(entries)
    except (OSError, ValueError):
        return []


def _matching(folder: str, pattern: str, folders_only: bool) -> list[str]:
    hidden = _glob_module._ishidden(pattern)
    return [entry.name for entry in _entries(folder)
            if (hidden or not _glob_module._ishidden(entry.name)) and fnmatch.fnmatch(entry.name, pattern)
            and (not folders_only or _is_dir(entry))]


def _below(folder: str, folders_only: bool) -> list[str]:
    """What a recursive `**` matches in `folder`: "" (the folder itself) and every entry under it
    (every folder, `folders_only`) that is not hidden, parents first, links to folders followed
    (as glob does)."""
    found = [""]
    for entry in _entries(folder):
        if not _glob_module._ishidden(entry.name):
            is_dir = _is_dir(entry)
            if is_dir or not folders_only:
                found.append(entry.name)
            if is_dir:
                found += [os.path.join(entry.name, name)
                          for name in _below(os.path.join(folder, entry.name), folders_only)[1:]]
    return found


def _is_dir(entry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
