"""The catalog as the last discovery made it, kept for the next one while nothing it was made
from has changed: a warm `list`, `search` or rescan of the mount then costs a few stats, not
a look at every session file.

A snapshot holds the sorted sessions with their short ids, grouped by working directory and
agent (a project's listing decodes its own groups only), and what they were made from:
- the folders the stores were listed from and the files read to list them (`storefs`: their
  inodes and mtimes), the environment variables read, the FUSE mounts avoided;
- the fingerprints of every source whose scan an append could change (those that are not
  `settled`, see discovery/catalog.py), and of the archive's index;
- the code: trajectoriz's version and its modules' sizes and mtimes (a changed scan gives
  another catalog).
When one of them differs, discovery runs again (discovery/catalog.py) and writes a new snapshot.
Snapshots are kept per environment (a project's commands look for the stores inside it from
another directory than `list --all`), the KEEP most recent.
"""

from __future__ import annotations

import marshal
import os

from agents.base import Session
from core import cache, mounts, storefs
from core.hashes import sha256
from core.version import VERSION

FOLDER = cache.named("catalog-v2")
KEEP = 8
MAGIC = b"tzcat\x01\n\x00"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the program's root
LISTING_CODE = ("", "core", "atif", "redaction", "agents", "discovery")  # what a listing's result depends on


def key(env, names, within: str | None = None) -> str:
    """Which snapshot serves this environment: the agents asked for, $HOME and the directory the
    stores kept inside projects are looked for from (the rest is checked inside); and the
    project (`within`) of a discovery that left out the sources it could tell held none of its
    sessions (catalog.discover)."""
    where = (env.get("PWD"), None if env.get("PWD") else _cwd())
    scope = () if within is None else (within,)
    material = repr((sorted(names) if names else None, env.get("HOME"), where, *scope)).encode("utf-8", "surrogatepass")
    return sha256(material).hexdigest()[:24]


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return ""


def code_stamp() -> list:
    """The version and trajectoriz's own modules (sizes, mtimes): a source tree edited since
    gives other scans. A bundle without its files (the built binary) has its version only."""
    found = [VERSION]
    for folder in LISTING_CODE:
        try:
            with os.scandir(os.path.join(ROOT, folder)) as listing:
                for entry in listing:
                    if entry.name.endswith(".py"):
                        st = entry.stat()
                        found.append((folder, entry.name, st.st_size, st.st_mtime_ns))
        except OSError:
            pass
    return sorted(found, key=repr)


class Made:
    """What a discovery hands over to be kept: the validity of its catalog, and per session
    the native files it depends on and the last modification time seen of its source."""

    def __init__(self):
        self.env: dict = {}
        self.witness: list = [[], [], []]
        self.volatile: dict = {}   # path -> fingerprint, for the sources that are not settled
        self.avoided: list = []
        self.native: dict = {}     # source -> [native files, the source's mtime (s), their
                                   # fingerprint, settled (catalog._sessions_of)]
        self.agents: dict = {}     # agent -> its module's version (documents' stamps)
        self.texts: dict = {}      # working directory -> as listings print it
        self.scoped = False        # whether sources of other projects were left out
        self.index: dict | None = None  # the index to write (catalog._keep), when it changed
        self.archive: list | None = None  # the archive's index as discovery began (`archive_state`)


def archive_state(env) -> list | None:
    from discovery import archive

    try:
        st = os.stat(archive.index_path(env))
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _path(env, name: str) -> str:
    return os.path.join(cache.cache_dir(env), FOLDER, name + ".bin")


# writing ----------------------------------------------------------------------------------------
def save(env, name: str, found, made: Made) -> None:
    """Keep `found` (a catalog.Catalog) as the snapshot `name`."""
    if not cache.usable(cache.cache_dir(env)):
        return
    groups: dict = {}  # (working directory, agent) -> records: Session.to_cache(), rank, short id, native
    native = made.native.get
    for rank, session in enumerate(found.sessions):
        record = session.written(session.extra, rank, session.short_id, native(session.source))
        groups.setdefault((session.cwd, session.agent), []).append(record)
    blobs, table, offset = [], [], 0
    for (cwd, agent), records in groups.items():
        blob = cache.kept_bytes(records)
        oldest = min((r[-1][1] for r in records if r[-1] and r[-1][1] is not None), default=None)  # retention
        table.append([cwd, agent, offset, len(blob), len(records), oldest])
        blobs.append(blob)
        offset += len(blob)
    extras = cache.kept_bytes([[(p.agent, p.source, p.reason) for p in found.problems], found.sources])
    header = {"code": code_stamp(), "env": made.env, "witness": made.witness, "avoided": made.avoided,
              "volatile": sorted(made.volatile.items()), "archive": made.archive,
              "groups": table, "extras": [offset, len(extras)], "agents": made.agents,
              "texts": made.texts, "scoped": made.scoped}
    head = cache.kept_bytes(header)
    data = MAGIC + len(head).to_bytes(8, "little") + head + b"".join(blobs) + extras
    try:
        cache.write_private(_path(env, name), data)
    except OSError:
        return
    _prune(os.path.dirname(_path(env, name)))


def remove_all(env) -> None:
    """Every snapshot (`forget`: none may keep a forgotten session's first message), once the
    one this process may be writing is written (`parallel.aside`)."""
    cache.settle_writers()
    folder = os.path.dirname(_path(env, "-"))
    for name in _names(folder):
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def _names(folder: str) -> list[str]:
    try:
        return [name for name in os.listdir(folder) if name.endswith(".bin")]
    except OSError:
        return []


def _prune(folder: str) -> None:
    """Keep the KEEP most recently written snapshots."""
    kept = []
    for name in _names(folder):
        try:
            kept.append((os.stat(os.path.join(folder, name)).st_mtime_ns, name))
        except OSError:
            pass
    for _, name in sorted(kept)[:-KEEP]:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


# reading ----------------------------------------------------------------------------------------
class Snapshot:
    """A snapshot file whose catalog still holds; its groups are read and decoded on demand
    (a project's listing reads its own only)."""

    def __init__(self, fd: int, header: dict, start: int):
        self._fd, self.header, self._start = fd, header, start

    def __del__(self):
        os.close(self._fd)

    def _part(self, offset: int, length: int):
        return marshal.loads(os.pread(self._fd, length, self._start + offset))

    def sessions(self, groups, native: dict, checked: bool = False, stats: dict | None = None) -> list[Session] | None:
        """The sessions of `groups` (rows of the header's table), in the catalog's order, their
        sources' Made.native entries put into `native`. `checked`: None when the files of one
        of their settled sources changed (the others were checked by `load`); the stat of
        each file checked put into `stats` (path -> result) when given."""
        with cache.no_collection():
            records = []
            for row in groups:
                records += self._part(row[2], row[3])
            records.sort(key=lambda record: record[-3])
            for record in records:
                entry = record[-1]
                if entry:
                    if checked and entry[3] and not unchanged(zip(entry[0], entry[2]), stats):
                        return None
                    native[record[2]] = entry
            return [_session(record) for record in records]

    def extras(self) -> tuple[list, dict]:
        """The discovery's problems, and the sources it saw per agent (for `agents`)."""
        return self._part(*self.header["extras"])


def _session(record: list) -> Session:
    session = Session(*record[:-3])
    session.short_id = record[-2]
    return session


def load(env, name: str) -> Snapshot | None:
    """The snapshot `name` when nothing it was made from changed, else None."""
    if not cache.usable(cache.cache_dir(env)):
        return None
    try:
        fd = os.open(_path(env, name), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        head = os.pread(fd, len(MAGIC) + 8, 0)
        size = int.from_bytes(head[len(MAGIC):], "little")
        header = marshal.loads(os.pread(fd, size, len(MAGIC) + 8)) if head.startswith(MAGIC) else None
    except (OSError, ValueError, EOFError, TypeError):
        header = None
    if header is None or not holds(header, env):
        os.close(fd)
        return None
    return Snapshot(fd, header, len(MAGIC) + 8 + size)


def holds(header: dict, env) -> bool:
    return (storefs.same_env(header["env"], env) and header["archive"] == archive_state(env)
            and _same_mounts(header, env) and header["code"] == code_stamp()
            and unchanged(header["volatile"]) and storefs.holds(header["witness"]))


def _same_mounts(header: dict, env) -> bool:
    """Whether the FUSE mounts discovery avoids are those it avoided, or differ only where no
    store was looked for (another user's test mount under /tmp changes nothing here)."""
    avoided = mounts.avoided(env)
    if avoided == header["avoided"]:
        return True
    changed = set(avoided) ^ set(header["avoided"])
    return not any(mounts.inside(path, changed) for path in storefs.paths(header["witness"]))


def unchanged(fingerprints, stats: dict | None = None) -> bool:
    """Whether every (path, fingerprint) is as it was (cache.fingerprint's [size, mtime_ns]);
    each path's stat result put into `stats` when given (None: missing)."""
    for path, seen in fingerprints:
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if stats is not None:
            stats[path] = st
        if st is None:
            if seen is not None:
                return False
            continue
        if seen is None or st.st_size != seen[0] or st.st_mtime_ns != seen[1]:
            return False
    return True
