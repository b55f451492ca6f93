"""The memory/ file system: README.md, INDEX.md (mount/memoryindex.py) and, per session of a
project, three files named from its id, read-only:
- `<date>_<agent>_<id>.card.md` and `<date>_<agent>_<id>.transcript.md`: its card and its
  transcript (rendering/views.py), made from its document;
- `<date>_<agent>_<id>.atif.json`: a symlink to `.atif/<date>_<agent>_<id>.atif.json`, its ATIF
  document. `.atif` is a folder that a lookup finds and a listing of memory/ never shows: GNU
  `grep -r` and `rg` skip the symlinks they meet while recursing, so what `grep -rn WORDS
  memory/` returns is lines of cards and transcripts, never a JSON line of tens of KB, while
  `jq`, `cat`, `cp`, an editor's Read and Python's `open` follow the link to the document (`ls
  -l` shows the link, `ls -lL`, `du -L`, `find -L` the document).
Every file is made when it is first stat'ed or opened (never when the directory is listed:
the symlinks need nothing), and kept: a document in the document cache, a card and a transcript
as side files of it (so a warm read never makes one again), their sizes with the document's
facts. When requests walk the directory (each file asked about is of the session listed next to
the previous one's: `ls -l`, `grep -r` and `du` go in the directory's order, `cat memory/*` in
the reverse), worker processes render the rest of it ahead of the walk, on every core
(mount/warmup.py). INDEX.md's first read waits for the workers to render the sessions whose
facts it does not know (at most INDEX_SECONDS; past it, INDEX.md says how many rows are pending).

The mfusepy operations (the public methods) are called by libfuse from one thread
(`nothreads`); a second thread, started in `init()`, re-discovers the sessions every few
seconds and swaps in a new `Listing`, which the operations read without locking.

Each open handle serves one rendering, from open to close, whole: the bytes the session had at
`open` (its document's, or its card's or transcript's made from them; or the README of that
moment), never a mix with a later version, whatever other readers
do meanwhile. The kernel keeps one page cache and one size (i_size) per file name, shared by
every handle on it: pages that one handle's reads filled are served to the next reader that
finds them, and any attribute answer (a `stat`, the size a read asks for) resets the size every
handle's cached reads stop at. So a handle reads through the page cache only while every open
handle of its file serves the same bytes; otherwise its reads come here (direct_io), with its
own bytes, and the kernel's size plays no part in them:
- `open` renders the session, or makes its card or transcript (or takes them from the byte
  cache or the document cache when its native files did not change). A session whose native files changed in the last SETTLED_SECONDS (one being
  recorded), or one that other open handles serve other bytes of, is opened direct_io.
- an `open` that finds a handle reading through the page cache with older bytes (the session
  changed while it read) gets those same older bytes, direct_io: the page-cache readers keep
  a size and pages that are theirs, and the new bytes are served once they have closed.
  Readers opened meanwhile do not prolong this: only page-cache handles hold it.
- the page cache is kept across opens (keep_cache) only when the bytes are those the previous
  page-cache open served and no direct handle (whose private memory maps fill the same pages)
  came in between; otherwise the kernel drops it.
- a `getattr` with a handle answers that handle's size. Without one (`stat`, `fstat`: the
  kernel does not say which handle), it answers from the handle the asking thread opened, else
  from the newest open handle of the file, else from the size cache, rendering on a miss (after
  waiting for the warm-up's workers when they have the session in hand or in line: whatever
  they record is checked against the session's current stamp like any entry).
- how long the kernel keeps an answer's attributes is said with each answer (libfuse 3 reads
  its fuse_config's attr_timeout as it makes each reply, lookups' included, and one thread
  answers): ATTR_SECONDS for a symlink's (its target is its name's), and for a settled
  session's document, card and transcript when no handle is open on it and the last
  two discoveries (the launcher's counts, when the server's first one reads its snapshot)
  found its native files as they are now (discovery's fingerprint; a file whose
  mtime is set back after each change, as `cp -p` does, is not settled by its mtime alone);
  none for a session being recorded, a handle's answer, README.md, INDEX.md and the
  directories (memory.mount_options: attr_timeout=0, which is all there is with libfuse 2). So a
  read that reaches the cached end of a file the kernel keeps nothing of asks again, with its
  handle; a warm `ls -l` or `grep -r` asks nothing per settled file (the kernel keeps what
  readlink said too: FUSE_CAP_CACHE_SYMLINKS).
- what the kernel keeps is dropped (fuse_invalidate_path: attributes and pages, of the
  session's four names) when the rescan finds the session's fingerprint changed or the session gone (resumed: within a rescan or
  two), and, before the `open` is answered, when an open's bytes are not those last answered
  with ATTR_SECONDS: from the serving thread when no handle is open on the file (then no read
  can hold its pages), else from another thread, every handle opened until it is done reading
  directly. A
  `stat` of a resumed session nobody opened may show the old size until the next rescan.
The cost of direct_io: every read is a request (no read-ahead, no cache), and a shared memory
map of such a file fails with ENODEV (libfuse 3.14 cannot ask the kernel for
FUSE_DIRECT_IO_ALLOW_MMAP); rg then reads instead. The kernel does allow a private map
(MAP_PRIVATE) of it, through the shared page cache: two private maps of different versions at
once could mix them (tools map shared, or read). Settled sessions, nearly all of a project's,
keep the page cache.

Attribute names matter: mfusepy registers any attribute named like a FUSE operation (`lock`,
`read`, `flush`, ...) as one. Everything that is not an operation starts with `_`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import stat
import sys
import threading
import time
from collections import OrderedDict

from agents import sqlite_ro
from archiving import archiver
from core import cache
from discovery import catalog
from mount import guide, memoryindex, warmup
from rendering import documents, views

README = "README.md"
RESCAN_SECONDS = 2.0
RESCAN_SHARE = 0.05   # of one core, at most, for rescanning a large store
ARCHIVE_SECONDS = 0.25  # of archiving the project's sessions per rescan, at most
CACHE_BYTES = 64 * 1024 * 1024
FUSE_CAP_READDIRPLUS, FUSE_CAP_READDIRPLUS_AUTO = 1 << 13, 1 << 14  # libfuse 3's fuse_common.h
SETTLED_SECONDS = 600  # a session whose files changed more recently is being recorded: direct_io
ATTR_SECONDS = 60.0  # how long the kernel may keep a settled session's attributes (libfuse 3)
INDEX_SECONDS = 4.5  # the longest INDEX.md's first read waits for the facts of sessions never rendered
DIR_MODE = stat.S_IFDIR | 0o555
FILE_MODE = stat.S_IFREG | 0o444
LINK_MODE = stat.S_IFLNK | 0o777
DOCUMENTS = ".atif"  # the folder of the documents: found by its name, never listed
FUSE_CAP_CACHE_SYMLINKS = 1 << 23  # libfuse 3's fuse_common.h: the kernel keeps what readlink said


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


DIRECTORY_ENTRIES = [(".", DIR_MODE, 0), ("..", DIR_MODE, 0), (README, FILE_MODE, 0), (memoryindex.INDEX, FILE_MODE, 0)]
# (name, mode, 0): a mode alone gives the entry its d_type


def document_path(name: str) -> str:
    """Where a document is served (its name in memory/ is a symlink to it)."""
    return f"{DOCUMENTS}/{name}"


class Listing:
    """One discovery's view of the project: document name -> session, each view's name (card,
    transcript) -> (its document's name, its kind), and the README that counts them. Never
    changed once built: the rescan thread replaces it whole."""

    def __init__(self, project: str, sessions: list, previous: "Listing | None" = None):
        self.files = {catalog.file_name(s): s for s in sessions}
        self.views = {views.name_of(name, kind): (name, kind) for name in self.files for kind in views.KINDS}
        self.documents = {document_path(name): name for name in self.files}
        self.position = {}  # a file's session's position: all of a session's files are one step of a walk
        for i, name in enumerate(self.files):
            for each in (name, document_path(name), *(views.name_of(name, kind) for kind in views.KINDS)):
                self.position[each] = i
        self.readme = guide.readme(project, list(self.files), mounted=True)
        self.entries = [*DIRECTORY_ENTRIES, *(entry for name in self.files for entry in (
            (name, LINK_MODE, 0), *((views.name_of(name, kind), FILE_MODE, 0) for kind in views.KINDS)))]  # readdir's
        self.document_entries = [(".", DIR_MODE, 0), ("..", DIR_MODE, 0), *((n, FILE_MODE, 0) for n in self.files)]
        same = previous is not None and list(previous.files) == list(self.files)  # an offset is a position
        self.changed_ns = previous.changed_ns if same else time.time_ns()

    def same_as(self, other: "Listing") -> bool:
        return self.files == other.files and self.readme == other.readme


class ByteCache:
    """Recently rendered documents, bounded by their total size, each valid for one stamp. A
    walk over the directory does not push out what is kept (`put(..., evict=False)`): with
    least-recently-used eviction, every document of a second `grep -r` over a project whose
    documents outweigh the cache would miss; this way what the cache holds of it stays."""

    def __init__(self, limit: int = CACHE_BYTES):
        self.limit = limit
        self.total = 0
        self._items: OrderedDict = OrderedDict()

    def get(self, key: str, stamp: list) -> bytes | None:
        found = self._items.get(key)
        if found is None or found[0] != stamp:
            return None
        self._items.move_to_end(key)
        return found[1]

    def put(self, key: str, stamp: list, data: bytes, evict: bool = True) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.total -= len(old[1])
        if len(data) > self.limit or (not evict and self.total + len(data) > self.limit):
            return
        self._items[key] = (stamp, data)
        self.total += len(data)
        while self.total > self.limit:
            _, (_, evicted) = self._items.popitem(last=False)
            self.total -= len(evicted)


class Handle:
    """An open file, the exact bytes served to it, whether its reads bypass the page cache
    (`direct`), and the thread that opened it (`opener`, as FUSE names it)."""

    __slots__ = ("name", "data", "mtime_ns", "direct", "opener")

    def __init__(self, name: str, data: bytes, mtime_ns: int, direct: bool, opener: int | None):
        self.name, self.data, self.mtime_ns = name, data, mtime_ns
        self.direct, self.opener = direct, opener


def _recent(mtime_ns: int) -> bool:
    return time.time_ns() - mtime_ns < SETTLED_SECONDS * 1_000_000_000


def stamp_mtime_ns(stamp: list) -> int | None:
    """The newest modification time among the native files a document was rendered from."""
    times = [entry[1] for entry in stamp[0] if entry]
    return max(times) if times else None


class MemoryFS:
    """The mfusepy operations (used with raw_fi=True: `fi` is libfuse's fuse_file_info)."""

    use_ns = True  # times in nanoseconds (mfusepy reads this attribute)

    def __init__(self, project: str, env, on_ready=None, worker_command: list[str] | None = None,
                 workers: int = 1, caller=None):
        """`worker_command` runs trajectoriz (invocation.self_command): with it, `workers` processes
        render ahead of a walk over the directory; without it, everything is rendered here.
        `caller()` names the thread whose request is being answered (libfuse's context)."""
        self._project = project
        self._env = catalog.looking_in(env, project)
        self._scope = catalog.Scope(project, env)
        self._facts = documents.Facts(env)
        self._cache = ByteCache()
        self._handles: dict[int, Handle] = {}
        self._open: dict[str, list[Handle]] = {}  # file name -> its open handles, oldest first
        self._next_fh = 1
        self._dir_kept: int | None = None  # changed_ns of the listing the kernel keeps the entries of
        self._in_page_cache: dict = {}  # file name -> version its pages may hold
        self._caller = caller or (lambda: None)
        self._uid, self._gid = os.getuid(), os.getgid()
        self._on_ready = on_ready
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warmer = warmup.Warmer(worker_command, env, self._facts.put, workers) if worker_command else None
        self._warmed: Listing | None = None
        self._index_asked: set = set()  # (cache key, stamp) of each session INDEX.md had rendered
        self._last_asked: tuple = (None, None)  # (listing, position) of the last file asked about
        self._archive_problem: str | None = None  # the last archiving failure the log holds
        self._index_cache: tuple = (None, None, None, b"")  # (listing, facts generation, watched, bytes)
        self._related_cache: tuple = (None, None, None, {})  # (listing, facts generation, watched, sections)
        self._config = None  # libfuse 3's fuse_config, whose attr_timeout each answer sets
        self._invalidate_path = None  # libfuse 3's fuse_invalidate_path, bound to this mount
        self._promised: dict = {}  # file name -> (size, mtime_ns) the kernel may keep ATTR_SECONDS
        self._forgetting: set = set()  # file names whose invalidation another thread is making
        self._watched: dict | None = None  # file name -> (session, what discovery checked of it)
        self._steady: set = set()  # file names the last two discoveries found unchanged
        self._listing = self._rescan(None)
        cache.settle_writers()  # what that discovery keeps is written before any thread starts

    # the listing ------------------------------------------------------------------------------
    def _rescan(self, previous: Listing | None) -> Listing:
        found = catalog.discover(self._env, within=self._project)
        sessions = self._scope.filter(found.sessions)
        if self._warmer is not None:  # the workers render: the SQLite snapshots that discovery
            sqlite_ro.release_shared()  # read (hundreds of MB for a big store) go
        fresh = Listing(self._project, sessions, previous)
        self._watch(fresh, found)
        return previous if previous is not None and previous.same_as(fresh) else fresh

    def _watch(self, listing: Listing, found) -> None:
        """What discovery has just checked of each session (its native files' fingerprint, for
        those it knows): the kernel's copy of a file's attributes is dropped when it changed
        since the previous rescan, or when the file is gone."""
        watched = {name: (s, known) for name, s in listing.files.items()
                   if catalog.origin(s).in_store and (known := found.known(s)) is not None}
        before, self._watched = self._watched, watched
        if before is None and found.snapshot is not None:  # the snapshot of an earlier discovery
            before = watched  # (the launcher's) held: every file is as that discovery found it
        self._steady = {name for name, seen in watched.items() if before is not None and before.get(name) == seen}
        if before is not None:
            for name in [n for n, seen in before.items() if watched.get(n) != seen]:
                for each in (name, document_path(name), *(views.name_of(name, kind) for kind in views.KINDS)):
                    self._invalidate(each)

    def _rescan_forever(self) -> None:
        # libfuse's SIGINT/SIGTERM handlers must run in the serving thread: only there do they
        # interrupt its wait for the next request.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        pause = RESCAN_SECONDS
        while not self._stop.wait(pause):
            started = time.monotonic()
            self._refresh()
            pause = max(RESCAN_SECONDS, (time.monotonic() - started) / RESCAN_SHARE)

    def _refresh(self) -> None:
        try:
            self._listing = self._rescan(self._listing)
            self._facts.save()
        except Exception as exc:  # keep serving the last good listing
            print(f"trajectoriz: rescan failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        self._archive_some()

    def _archive_some(self) -> None:
        """Archive the project's sessions as the mount sees them, from this thread (requests are
        never kept waiting), a bounded slice per pass; a session being recorded is archived
        again once it settles."""
        live = [s for s in self._listing.files.values() if catalog.origin(s).in_store]
        settled = time.time_ns() - SETTLED_SECONDS * 1_000_000_000
        try:
            archiver.archive_some(self._env, live, ARCHIVE_SECONDS, settled)
            self._archive_problem = None
        except Exception as exc:  # a full disk, say: the mount keeps serving, and says it once
            problem = f"trajectoriz: archiving failed: {type(exc).__name__}: {exc}"
            if problem != self._archive_problem:
                print(problem, file=sys.stderr, flush=True)
            self._archive_problem = problem

    def init_with_config(self, conn, config):
        """`config` is libfuse's own fuse_config (None with libfuse 2), read again as each reply
        is made: attributes are then kept by the kernel as long as each answer says. No
        READDIRPLUS (libfuse 3 asks for it): a listing has no attributes to give (a size means
        rendering), and with it every name takes 192 bytes of a reply instead of 64, three
        replies for 500 names instead of one."""
        if config is not None:
            conn.want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO)
            conn.want |= conn.capable & FUSE_CAP_CACHE_SYMLINKS
            import mfusepy

            library = mfusepy._libfuse
            library.fuse_invalidate_path.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            library.fuse_invalidate_path.restype = ctypes.c_int
            fuse = library.fuse_get_context().contents.fuse
            self._invalidate_path = lambda name: library.fuse_invalidate_path(fuse, os.fsencode("/" + name))
            self._config = config
        self._thread = threading.Thread(target=self._rescan_forever, name="rescan", daemon=True)
        self._thread.start()
        if self._on_ready:
            self._on_ready()

    def _invalidate(self, name: str) -> None:
        """The kernel forgets the file's attributes (and cached pages), when it has them."""
        if self._invalidate_path is not None:
            self._invalidate_path(name)  # -ENOENT: the kernel does not know the file

    def destroy(self, path):
        if self._warmer is not None:
            self._warmer.stop()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._facts.save()

    # attributes -------------------------------------------------------------------------------
    def _attrs(self, mode: int, size: int, mtime_ns: int) -> dict:
        return {"st_mode": mode, "st_nlink": 2 if stat.S_ISDIR(mode) else 1, "st_size": size,
                "st_blocks": (size + 511) // 512, "st_uid": self._uid, "st_gid": self._gid,
                "st_mtime": mtime_ns, "st_ctime": mtime_ns, "st_atime": mtime_ns}

    def getattr(self, path, fh=None):
        name = path[1:]
        self._keep(name, None)  # unless the answer is a settled session's, below
        listing = self._listing
        if path == "/" or name == DOCUMENTS:
            return self._attrs(DIR_MODE, 0, listing.changed_ns)
        if name in listing.files:  # a document's symlink (its target never changes), while its session is
            self._session(listing, name)  # there
            self._keep(name, (len(document_path(name)), listing.changed_ns))
            return self._attrs(LINK_MODE, len(document_path(name)), listing.changed_ns)
        handle = self._handles.get(fh.fh) if fh is not None else self._asker_handle(name)
        if handle is not None:
            return self._attrs(FILE_MODE, len(handle.data), handle.mtime_ns)
        if name == README:
            return self._attrs(FILE_MODE, len(listing.readme), listing.changed_ns)
        if name == memoryindex.INDEX:
            return self._attrs(FILE_MODE, len(self._index(listing)), listing.changed_ns)
        document, kind = self._of(listing, name)
        session = self._session(listing, document)
        walk = self._walk(listing, name)
        stamp = self._stamp(document, session)
        facts = self._known_facts(listing, session, stamp, walk)
        size = facts.get("size" if kind is None else views.SIZE_FACT[kind]) if facts is not None else None
        if not isinstance(size, int):
            stamp, data = (self._render(listing, session, walk) if kind is None
                           else self._view(listing, document, kind, walk))
            size = len(data)
        if kind == "card":  # the related sessions' section, from the other sessions' facts
            size += len(self._related(listing).get(name, "").encode("utf-8", "surrogatepass"))
        mtime_ns = stamp_mtime_ns(stamp)
        if mtime_ns is not None and not _recent(mtime_ns) and self._steady_at(document, stamp):
            self._keep(name, (size, mtime_ns))
        return self._attrs(FILE_MODE, size, mtime_ns or listing.changed_ns)

    @staticmethod
    def _of(listing: Listing, name: str) -> tuple[str, str | None]:
        """The document a served file is made from, and which view of it (None: the document)."""
        if name in listing.documents:
            return listing.documents[name], None
        if name in listing.views:
            return listing.views[name]
        raise _error(errno.ENOENT)

    def readlink(self, path):
        if path[1:] not in self._listing.files:
            raise _error(errno.ENOENT if path[1:] not in self._listing.views else errno.EINVAL)
        return document_path(path[1:])

    def _view(self, listing: Listing, document: str, kind: str, walk: int) -> tuple[list, bytes]:
        """A view of a document (card, transcript) and the stamp of the bytes it was made from:
        kept in memory and on disk (views.py), else made now, its size recorded with the facts."""
        session = self._session(listing, document)
        stamp = self._stamp(document, session)
        key = f"{documents.cache_key(session)}|{kind}"
        data = self._cache.get(key, stamp)
        if data is None:
            data = views.kept(self._env, session, stamp, kind)
        if data is None:
            from atif.serialize import loads

            stamp, rendered = self._render(listing, session, walk)
            data = views.kept(self._env, session, stamp, kind)
            if data is None:
                data = views.made(kind, loads(rendered))
                views.keep(self._env, session, stamp, kind, data)
            facts = self._facts.get(session, stamp)
            if facts is not None and facts.get(views.SIZE_FACT[kind]) != len(data):
                self._facts.put(session, {**facts, views.SIZE_FACT[kind]: len(data)})
        self._cache.put(key, stamp, data, evict=not walk)
        return stamp, data

    def _stamp(self, document: str, session) -> list:
        """The session's stamp now (documents.cache_stamp), from one stat of each of the native
        files the last rescan found it made of, sparing the translator's look for more (a
        warm `grep -r` opens a thousand files). A change to those files counts at once; a
        native file it gained since (a sub-agent's transcript) from the next rescan, seconds
        later."""
        seen = (self._watched or {}).get(document)
        origin = catalog.origin(session)
        if seen is None or documents.cache_key(seen[0]) != documents.cache_key(session) or not origin.in_store:
            return documents.cache_stamp(session, self._env)
        files, version, _ = seen[1]
        return origin.stamp(self._env, True, (files, version, cache.fingerprint(files)))

    def _related(self, listing: Listing) -> dict:
        """card name -> its related sessions' section (memoryindex.related), from the facts
        known now; made again when the listing, the facts or the rescan's findings changed, as
        INDEX.md is. A card's bytes (and the version its page cache is kept under) include it.
        The facts it needs are those INDEX.md's first read has made (at most INDEX_SECONDS, once):
        a card read first says the same as one read after INDEX.md."""
        self._index(listing)
        watched = self._watched
        cached_listing, generation, cached_watched, _ = self._related_cache
        if (cached_listing is not listing or generation != self._facts.generation
                or cached_watched is not watched):
            sessions = list(listing.files.values())
            known = [self._facts.get(s, documents.cache_stamp(
                s, self._env, self._facts.redact, (watched or {}).get(catalog.file_name(s), (None, None))[1]))
                for s in sessions]
            self._related_cache = (listing, self._facts.generation, watched, memoryindex.related(self._project, sessions, known))
        return self._related_cache[3]

    def _steady_at(self, name: str, stamp: list) -> bool:
        """Whether the answer is of the files the last two discoveries found unchanged: a
        session that changes between rescans (its mtime may say otherwise) never has its
        attributes kept."""
        seen = (self._watched or {}).get(name)
        return name in self._steady and seen is not None and seen[1][2] == stamp[0]

    def _keep(self, name: str, answer: tuple | None) -> None:
        """How long the kernel keeps the attributes of the answer being made: ATTR_SECONDS for a
        settled session's (size, mtime_ns) when no handle is open on it, which the rescan watches;
        none for anything else."""
        if self._config is None:
            return
        self._config.attr_timeout = ATTR_SECONDS if answer is not None else 0.0
        if answer is not None:
            self._promised[name] = answer
        else:
            self._promised.pop(name, None)

    def _index(self, listing: Listing) -> bytes:
        """INDEX.md as the listing and the facts known now make it, each session's stamp as the
        last rescan's discovery checked it (sparing a stat of every session's files); made
        again when the listing, the facts or the rescan's findings changed (a session may have
        changed since it was rendered), so that an `ls -l` does not stat every session twice."""
        watched = self._watched  # replaced whole by each rescan
        cached_listing, generation, cached_watched, _ = self._index_cache
        if (cached_listing is not listing or generation != self._facts.generation
                or cached_watched is not watched):
            known = lambda s: (watched or {}).get(catalog.file_name(s), (None, None))[1]  # noqa: E731
            data = memoryindex.index(self._project, list(listing.files.values()), self._facts, self._env, known,
                                     self._fill_index)
            self._index_cache = (listing, self._facts.generation, watched, data)
        return self._index_cache[3]

    def _fill_index(self, unknown: list) -> None:
        """Render the sessions INDEX.md knows no facts of ((session, stamp) pairs, newest first)
        before it is answered: on the workers, every core, or here without them; at most
        INDEX_SECONDS, after which INDEX.md says which rows are pending (the workers go on). A
        version of a session is waited for once: one that cannot be rendered delays one read."""
        wanted = []
        for session, stamp in unknown:
            version = (documents.cache_key(session), repr(stamp))
            if version not in self._index_asked:
                self._index_asked.add(version)
                wanted.append((session, stamp))
        if not wanted:
            return
        deadline = time.monotonic() + INDEX_SECONDS
        if self._warmer is not None:
            self._warmer.warm([session for session, _ in wanted], first=True)
            self._warmer.wait_all([session for session, _ in wanted], deadline)
        for session, stamp in wanted:  # what no worker could render (none started, or they died)
            if time.monotonic() >= deadline:
                break
            if self._facts.get(session, stamp) is None:
                if self._warmer is not None:
                    self._warmer.wait(session)  # (at once: no worker has it in hand)
                self._facts.rendered(session)

    def _known_facts(self, listing: Listing, session, stamp: list, walk: int) -> dict | None:
        facts = self._facts.get(session, stamp)
        if facts is None and self._warmer is not None:
            self._wait_for_workers(listing, session, walk)
            facts = self._facts.get(session, stamp)
        return facts

    def _walk(self, listing: Listing, name: str) -> int:
        """+1 when the file asked about is listed right after the previous request's, -1 right
        before it: a walk over the directory, which the workers can run ahead of; else 0."""
        position = listing.position.get(name)
        last_listing, last = self._last_asked
        self._last_asked = (listing, position)
        if last_listing is not listing or position is None or last is None:
            return 0
        return position - last if abs(position - last) == 1 else 0

    def _wait_for_workers(self, listing: Listing, session, walk: int) -> None:
        """A session not rendered yet: on a walk, the workers start on the rest of the listing
        in the walk's direction (once per listing); then wait for them when they have this one
        in hand or in line."""
        if walk and listing is not self._warmed:
            self._warmed = listing
            sessions = list(listing.files.values())
            position = listing.position[catalog.file_name(session)]
            ahead = sessions[position:] if walk > 0 else sessions[position::-1]
            self._warmer.warm([s for s in ahead if self._facts.get(s, documents.cache_stamp(s, self._env)) is None])
        self._warmer.wait(session)

    def _asker_handle(self, name: str) -> Handle | None:
        """The open handle a `stat` without one is most likely about: the one the asking thread
        opened (`fstat`), else the newest."""
        handles = self._open.get(name)
        if not handles:
            return None
        if len(handles) > 1:
            asker = self._caller()
            return next((h for h in reversed(handles) if h.opener == asker), handles[-1])
        return handles[0]

    def _session(self, listing: Listing, name: str):
        """The session of a document's name; a live one deleted since the listing was made is
        served from the archive when it holds it, else it is gone (its origin says: `now`)."""
        session = listing.files.get(name)
        if session is not None:
            session = catalog.origin(session).now(self._env)
        if session is None:
            raise _error(errno.ENOENT)
        return session

    def _render(self, listing: Listing, session, walk: int) -> tuple[list, bytes]:
        """The session's current bytes and their stamp: cached ones if its files did not change."""
        key = documents.cache_key(session)
        taken = documents.stamps(session, self._env)  # one stat of each native file: for the
        stamp = taken[0]  # byte cache (cache_stamp), and the document cache's stamp on a miss
        data = self._cache.get(key, stamp)
        if data is None:
            if self._warmer is not None:
                self._wait_for_workers(listing, session, walk)  # then in the document cache
            stamp, data = self._facts.rendered(session, taken)
            self._cache.put(key, stamp, data, evict=not walk)
        return stamp, data

    def opendir(self, path, fi):
        """The kernel keeps the entries it read (cache_readdir, passed on by libfuse 3.16 and
        later) and, at the next open, keeps them (keep_cache) while the listing is the one they
        were read from (its `changed_ns`, which is also the directory's mtime: the kernel drops
        them itself when that changes). A readdir lists the listing of its moment, never an
        older one, so what the kernel keeps is never older than the mtime it kept it under."""
        if path not in ("/", "/" + DOCUMENTS):
            raise _error(errno.ENOTDIR)
        if path != "/":
            return 0
        if hasattr(fi, "cache_readdir"):
            changed = self._listing.changed_ns
            fi.cache_readdir = 1
            fi.keep_cache = int(changed == self._dir_kept)
            self._dir_kept = changed
        return 0

    def readdir(self, path, fh):
        if path == "/" + DOCUMENTS:
            return self._listing.document_entries
        if path != "/":
            raise _error(errno.ENOTDIR)
        return self._listing.entries  # the same list while the listing stands

    def getxattr(self, path, name, position=0):
        """No extended attributes, ENOTSUP: `ls -l` then stops asking for ACLs on this mount.
        Without the operation libfuse answers ENOSYS, after which the kernel answers ENODATA to
        every ACL query itself, and `ls -l` asks again for each file."""
        raise _error(errno.ENOTSUP)

    def statfs(self, path):
        return {"f_bsize": 4096, "f_frsize": 4096, "f_namemax": 255}

    # reading ----------------------------------------------------------------------------------
    def open(self, path, fi):
        if fi.flags & (os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND):
            raise _error(errno.EROFS)
        listing = self._listing
        name = path[1:]
        if name in (README, memoryindex.INDEX):
            data = version = listing.readme if name == README else self._index(listing)
            mtime_ns = listing.changed_ns
        else:
            if name in listing.files:  # the kernel follows the symlink; a caller of these methods may not
                name = document_path(name)
            document, kind = self._of(listing, name)
            walk = self._walk(listing, name)
            if kind is None:
                stamp, data = self._render(listing, self._session(listing, document), walk)
                version = stamp
            else:
                stamp, data = self._view(listing, document, kind, walk)
                related = self._related(listing).get(name, "") if kind == "card" else ""
                data += related.encode("utf-8", "surrogatepass")
                version = [*stamp, kind, related]
            mtime_ns = stamp_mtime_ns(stamp) or listing.changed_ns
        handle = self._handle_for(name, version, data, mtime_ns)
        promised = self._promised.get(name)
        if promised is not None and promised != (len(handle.data), handle.mtime_ns):
            self._broken_promise(name, handle)
        elif name in self._forgetting:  # the kernel may still hold a size these bytes are not
            handle.direct = True
        fi.direct_io = int(handle.direct)
        fi.keep_cache = int(not handle.direct and self._in_page_cache.get(name) == version)
        self._in_page_cache[name] = None if handle.direct else version
        fi.fh = self._next_fh
        self._next_fh += 1
        self._handles[fi.fh] = handle
        self._open.setdefault(name, []).append(handle)
        return 0

    def _handle_for(self, name: str, version, data: bytes, mtime_ns: int) -> Handle:
        """The bytes and the mode of a new handle (the rules are in the module's docstring)."""
        others = self._open.get(name, ())
        cached = next((h for h in others if not h.direct), None)
        if cached is not None and cached.data != data:  # changed while read through the cache
            return Handle(name, cached.data, cached.mtime_ns, True, self._caller())
        direct = _recent(mtime_ns) or any(h.data != data for h in others)
        return Handle(name, data, mtime_ns, direct, self._caller())

    def _broken_promise(self, name: str, handle: Handle) -> None:
        """The file changed since the kernel was told it could keep its attributes (the rescan
        has not seen it yet): the kernel forgets them before this open is answered, so that the
        opener's fstat asks. Dropping its pages waits for reads in flight on them, which only
        an open handle can have: with one open, the kernel is told from another thread, and
        this handle reads directly meanwhile."""
        del self._promised[name]
        if name not in self._open:
            self._invalidate(name)
        else:
            handle.direct = True
            self._forgetting.add(name)
            threading.Thread(target=self._forget, args=(name,), name="invalidate", daemon=True).start()

    def _forget(self, name: str) -> None:
        try:
            self._invalidate(name)
        finally:
            self._forgetting.discard(name)

    def read(self, path, size, offset, fi):
        handle = self._handles.get(fi.fh)
        if handle is None:
            raise _error(errno.EBADF)
        return handle.data[offset:offset + size]

    def release(self, path, fi):
        handle = self._handles.pop(fi.fh, None)
        if handle is not None:
            siblings = self._open[handle.name]
            siblings.remove(handle)
            if not siblings:
                del self._open[handle.name]
        return 0

    # everything that would write --------------------------------------------------------------
    def _read_only(self, *args):
        raise _error(errno.EROFS)

    chmod = chown = create = fallocate = link = mkdir = mknod = removexattr = rename = rmdir = \
        setxattr = symlink = truncate = unlink = utimens = write = _read_only
