"""The archive: every session trajectoriz has seen, kept so that it can be translated again after
its agent deleted it (Claude Code and Gemini CLI delete sessions older than 30 days).

Where: `${XDG_DATA_HOME:-~/.local/share}/trajectoriz/archive/` (0700, files 0600):
- `index.bin`: the index, one file (magic, sha256 of the payload, then two marshal version 4
  parts: the listing discovery reads, and the rest; `encode_index`). It is replaced whole
  (temporary file, then rename), so a reader sees one committed state or the next.
- `data/<xx>/<fid>.zst`: one blob per archived version of a native file (`fid`, random), a
  sequence of zstd frames whose decompressed concatenation is the file's bytes.
- `lock`: held (flock) by the one process writing (archiving/archiver.py); readers take no lock.
- `mirrors/`: archived sessions being translated, written out (see Reading).

The index holds
- `files`: fid -> {"path", "frames": [[stored bytes, native bytes, sha256 of those native
  bytes], ...], "fingerprint": [size, mtime_ns] when last read, "head"/"tail": sha256 of the
  first and of the last HEAD_BYTES of the content, "damaged": why (set by `archive --verify`)}.
  A file that grew by appending (its head and the bytes before its old end unchanged) gets one
  more frame in the same blob: appending 1 MB to a 100 MB transcript costs about 1 MB. A file
  changed otherwise is stored anew under a new fid.
- `current`: native path -> the fid of its newest version (the one appends extend).
- `sessions`: key (`session_key`) -> {"agent", "record" (`Session.to_cache()` as live discovery
  saw it: id, start, cwd, first message, locator, extra), "fingerprint" (of its native files
  when archived), "files": [[path, "file", fid, length] or [path, "dir", None, 0], ...],
  "signature" (database sessions with `extract`), "archived"/"updated" (epoch seconds)}.
  A session pins the `length` of each version it was archived with: a later append to that
  version is not part of it (a SQLite -wal that grows by the frames deleting its rows, say).
- `forgotten`: keys of sessions `trajectoriz forget` removed, never archived again.

Reading (this module): discovery lists the archived sessions whose native record is gone
(`sessions_of`), each a `Session` from its discovery record marked `extra["archived"]`; its
document is translated from its archived bytes (`translate`): they are written into a private
folder that mirrors their original paths (`mirrors/<pid>-<random><original path>`), the
session's source and every path-valued environment variable ($HOME, $XDG_DATA_HOME,
$CODEX_HOME, ...) are pointed there, the agent's own translator runs, and the mirror's prefix is taken out of every string of
the document, which is then the one the live session gave. Every frame read is checked (zstd's
own checksum, then its length and sha256): a damaged entry is never served, its document says
what is wrong.

A module whose translation reads files that are not its `dependencies` (looked up at every
discovery, so kept cheap) names them to the archive, which reads them when it archives:

    def archive_dependencies(session, env) -> list[str]
        Codex: the parent's rollout of a fork or a sub-agent, whose turns the child's copy of
        them is told apart by.

Database stores keep many sessions in one SQLite file. A module of such a store may offer:

    def extract(session, env) -> bytes
        A SQLite database image (`Connection.serialize()`) with the same schema as the store
        and only this session's rows (with its sub-agent sessions'), such that translating the
        session with its source pointed at that image gives the same document.
    def extract_signature(session, env) -> str | None
        A cheap marker of the session's rows, which changes whenever they do: asked only when
        the store's files changed; `extract` runs only when the marker changed. None for a
        session the module does not extract (opencode's older JSON tree, a session bigger than
        an extract holds, rows SQLite cannot read): its files are archived instead.
Either raises when the store cannot be read, or no longer holds the session: the copy archived
before is kept. opencode, Kilo, Crush, Goose and Hermes offer both (agents/sqlite_extract.py).

The image is archived as the session's one file, at the store's path. A database module without
`extract` has its database files archived instead (the database and its -wal, shared by every
session of that store, versioned like any file): correct, but the whole database is kept, with
whatever else it holds (an opencode database keeps account tokens), and once per change of it
while some archived session still needs the older version.
"""

from __future__ import annotations

import atexit
import marshal
import os
import sys
import threading

import agents
from agents.base import Session
from core import cache
from core.hashes import sha256_digest
from core.version import VERSION
from discovery.origin import Origin, module_version

FOLDER = os.path.join("trajectoriz", "archive")
INDEX = "index.bin"
DATA = "data"
MAGIC = b"TRZARCH1"
MARSHAL_VERSION = 4   # fixed: the archive outlives the interpreter that wrote it
HEAD_BYTES = 4096     # the head and the tail around a file's old end, compared before appending
CHUNK = 1024 * 1024
MIRRORS = "mirrors"  # archived sessions materialized to be translated (raw bytes stay in here)


class Damaged(Exception):
    """An archived entry that cannot be served as recorded (missing blob, bad zstd, wrong
    length or checksum)."""


# where ------------------------------------------------------------------------------------------
def folder(env) -> str:
    base = cache.xdg_dir(env, "XDG_DATA_HOME", ".local", "share")
    return os.path.join(base, FOLDER)


def index_path(env) -> str:
    return os.path.join(folder(env), INDEX)


def blob_path(env, fid: str) -> str:
    return os.path.join(folder(env), DATA, fid[:2], fid + ".zst")


def new_fid() -> str:
    return os.urandom(12).hex()


def session_key(agent: str, native_id: str, cwd: str | None) -> str:
    """The identity of a session in the archive, as discovery tells sessions apart: its agent and
    native id, and its working directory for agents that keep sessions per project (`cwd` None
    for the others)."""
    import hashlib  # here: listings import this module, seldom read the archive

    identity = "\0".join([agent, native_id, cwd or ""])
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# the index --------------------------------------------------------------------------------------
def empty_index() -> dict:
    return {"format": 1, "files": {}, "current": {}, "sessions": {}, "forgotten": {}}


def encode_index(index: dict) -> bytes:
    """Two marshal parts under one checksum: the listing (key -> [agent, discovery record,
    identity]: all that discovery reads, a third of the time to parse), then the rest."""
    sessions = index["sessions"]
    listing = {key: [e["agent"], e["record"], identity(e, index)] for key, e in sessions.items()}
    rest = {**index, "sessions": {key: {k: v for k, v in e.items() if k not in ("agent", "record")}
                                  for key, e in sessions.items()}}
    head = marshal.dumps({"format": 1, "listing": listing}, MARSHAL_VERSION)
    payload = len(head).to_bytes(8, "big") + head + marshal.dumps(rest, MARSHAL_VERSION)
    return MAGIC + sha256_digest(payload) + payload


def _parts(data: bytes, both: bool) -> list:
    """The listing and (with `both`) the rest; ValueError when the bytes are not a complete,
    intact index."""
    payload = data[len(MAGIC) + 32:]
    if not data.startswith(MAGIC) or sha256_digest(payload) != data[len(MAGIC):len(MAGIC) + 32]:
        raise ValueError("the archive index is damaged (its checksum does not match)")
    end = 8 + int.from_bytes(payload[:8], "big")
    try:
        parts = [marshal.loads(payload[8:end])] + ([marshal.loads(payload[end:])] if both else [])
    except (ValueError, EOFError, TypeError) as exc:
        raise ValueError(f"the archive index cannot be read: {exc}") from None
    if not all(isinstance(part, dict) and part.get("format") == 1 for part in parts):
        raise ValueError("the archive index is of an unknown format")
    return parts


def decode_index(data: bytes) -> dict:
    listing, index = _parts(data, both=True)
    for key, (agent, record, _) in listing["listing"].items():
        index["sessions"][key].update(agent=agent, record=record)
    return index


def read_index(env) -> dict:
    """The committed index (an empty one when there is no archive). Raises ValueError for a
    damaged index and OSError for one that cannot be read."""
    try:
        with open(index_path(env), "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return empty_index()
    return decode_index(data)


_loaded: dict = {}   # (index path, part) -> ((inode, size, mtime_ns), what was parsed)
_warned: set = set()


def load(env) -> dict:
    """`read_index`, parsed once per process while the file does not change (the mount
    rediscovers every few seconds); an index that cannot be read is an empty one, said once on
    stderr. Never modify what it returns."""
    return _memo(env, "index", decode_index, empty_index)


def _listing(env) -> dict:
    """agent -> [(key, [agent, record, identity])] of the archived sessions, parsed from the
    index's first part only, once per version of the file."""
    def grouped(data: bytes) -> dict:
        by_agent: dict = {}
        for item in _parts(data, both=False)[0]["listing"].items():
            by_agent.setdefault(item[1][0], []).append(item)
        return by_agent
    return _memo(env, "listing", grouped, dict)


def _memo(env, part: str, parse, empty):
    path = index_path(env)
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            found = _loaded.get((path, part))
            if found is None or found[0] != key:
                found = _loaded[path, part] = (key, parse(handle.read()))
    except (FileNotFoundError, NotADirectoryError):  # no archive
        return empty()
    except (OSError, ValueError) as exc:
        if path not in _warned:
            _warned.add(path)
            print(f"trajectoriz: warning: archived sessions not read: {exc}", file=sys.stderr)
        return empty()
    return found[1]


# archived sessions for discovery ------------------------------------------------------------------
def sessions_of(env, agent: str, listed=None) -> list[Session]:
    """The archived sessions of one agent, as discovery lists them (new objects at every call:
    the catalog marks twins on them). `listed(native_id, cwd)` says which are listed already
    (their live record wins): those are not made at all."""
    found = []
    for key, item in _listing(env).get(agent, ()):
        record = item[1]
        if listed is not None and listed(record[1], record[4]):  # Session's native_id, cwd
            continue
        session = restored(key, item)
        if session is not None:
            found.append(session)
    return found


def restored(key: str, item: list) -> Session | None:
    """The archived session of a listing item ([agent, record, identity]), marked as served
    from the archive."""
    try:
        session = Session.from_cache(list(item[1]))
    except TypeError:  # a record of another shape: nothing to list
        return None
    session.extra = {**session.extra, "archived": {"key": key, "identity": item[2]}}
    return session


def key_of(session: Session, module=None) -> str:
    """A session's key in the archive (`session_key`, per project for the agents that keep
    sessions per project)."""
    module = module or agents.load(session.agent)
    per_project = getattr(module, "SESSIONS_PER_PROJECT", False)
    return session_key(session.agent, session.native_id, session.cwd if per_project else None)


def holds(env):
    """A predicate: whether the archive holds a session (some version of it), read from the
    index's listing only, and only once a session not listed from the archive is asked about
    (a warm listing whose sessions none of the agents will delete soon reads no archive: 7 ms
    for an archive of 40,000 sessions, and OpenSSL's load to check it)."""
    keys: set | None = None

    def held(session) -> bool:
        nonlocal keys
        if marked(session) or "shared" in session.extra:  # a pulled session: its agent deletes nothing of it
            return True
        if keys is None:
            keys = {key for items in _listing(env).values() for key, _ in items}
        return key_of(session) in keys
    return held


def copy_of(session: Session, env) -> Session | None:
    """The archived copy of a live session its agent has just deleted (served until the next
    discovery lists it from the archive), under the same short id; None when there is none."""
    index = load(env)
    key = key_of(session)
    entry = index["sessions"].get(key)
    if entry is None:
        return None
    copy = restored(key, [entry["agent"], entry["record"], identity(entry, index)])
    if copy is not None:
        copy.short_id = session.short_id
    return copy


def marked(session: Session) -> bool:
    """Whether discovery listed this session from the archive (its native record is gone)."""
    return "archived" in session.extra


def identity(entry: dict, index: dict) -> str:
    """What an archived session's document depends on: the versions and lengths of its files,
    and the checksum of the last frame each length reaches."""
    import hashlib  # here: listings import this module, seldom read the archive

    parts = []
    for path, kind, fid, length in entry["files"]:
        record = index["files"].get(fid) if kind == "file" else None
        try:
            last = _frames_within(record, length)[-1][2] if record and length else ""
        except Damaged:  # served as damaged; listed all the same
            last = "damaged"
        parts.append(f"{kind}:{fid}:{length}:{last}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def fingerprint(session: Session, env) -> list:
    """The fingerprint of an archived session's native files as they were when archived (for
    the stamps of its cached documents and the mtime the mount shows)."""
    entry = load(env)["sessions"].get(session.extra["archived"]["key"])
    return list(entry["fingerprint"]) if entry else []


# reading frames ---------------------------------------------------------------------------------
def native_size(record: dict) -> int:
    return sum(frame[1] for frame in record["frames"])


def stored_size(record: dict) -> int:
    return sum(frame[0] for frame in record["frames"])


def _frames_within(record: dict | None, length: int) -> list:
    """The frames holding the first `length` bytes of a version (a session pins a length that
    ends on a frame)."""
    frames, total = [], 0
    for frame in (record or {}).get("frames", ()):
        if total >= length:
            break
        frames.append(frame)
        total += frame[1]
    if total != length:
        raise Damaged(f"the archive holds {total} bytes of a file recorded with {length}")
    return frames


def read_version(env, fid: str, record: dict, length: int, write) -> None:
    """Decompress the first `length` bytes of a version into `write`, frame after frame, each
    checked. Raises Damaged."""
    if record.get("damaged"):
        raise Damaged(record["damaged"])
    import zstandard

    try:
        fd = os.open(blob_path(env, fid), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Damaged(f"its data cannot be read: {exc.strerror}") from None
    try:
        offset = 0
        for stored, native, digest in _frames_within(record, length):
            _read_frame(fd, offset, stored, native, digest, zstandard.ZstdDecompressor(), write)
            offset += stored
    finally:
        os.close(fd)


def _read_frame(fd: int, offset: int, stored: int, native: int, digest: str, decompressor, write) -> None:
    import hashlib  # here: listings import this module, seldom read the archive
    import zstandard

    frame = decompressor.decompressobj()
    hasher, produced, position = hashlib.sha256(), 0, offset
    while position < offset + stored:
        try:
            data = os.pread(fd, min(CHUNK, offset + stored - position), position)
            out = frame.decompress(data) if data else b""
        except OSError as exc:
            raise Damaged(f"its data cannot be read: {exc.strerror}") from None
        except zstandard.ZstdError as exc:
            raise Damaged(f"its data is not valid zstd: {exc}") from None
        if not data:
            raise Damaged("its data is cut short")
        position += len(data)
        hasher.update(out)
        produced += len(out)
        write(out)  # an OSError here is the reader's (a full disk under the mirror), not damage
    if not frame.eof or frame.unused_data or produced != native or hasher.hexdigest() != digest:
        raise Damaged("its data does not match its checksum")


def check_version(env, fid: str, record: dict) -> str | None:
    """Why a whole version cannot be served, or None when every frame is intact."""
    try:
        read_version(env, fid, record, native_size(record), lambda data: None)
    except Damaged as exc:
        return str(exc)
    return None


# translating from the archive ----------------------------------------------------------------------
def translate(module, session: Session, env) -> dict:
    """The agent's own translation of an archived session, from its archived bytes, with every
    path as the live session had it. Raises Damaged (the document then says why)."""
    index = load(env)
    entry = index["sessions"].get(session.extra["archived"]["key"])
    if entry is None or identity(entry, index) != session.extra["archived"]["identity"]:
        raise Damaged("the archived copy changed or was forgotten since it was listed; list again")
    with _mirror_lock:  # the kept mirror is this process's, one translation at a time
        mirror = _mirror(env, entry, index)
        relocated = Session.from_cache(session.to_cache())
        relocated.source = mirror + session.source
        relocated.short_id = session.short_id
        try:
            return _without_prefix(module.translate(relocated, relocated_env(env, mirror)), mirror)
        except Exception as exc:  # the failure document then names the original paths too
            _strip_paths(exc, mirror)
            raise


def relocated_env(env, mirror: str) -> dict:
    """`env` with every variable naming an absolute path pointed into the mirror (a store found
    from $HOME or $CODEX_HOME is then found there); search paths ($PATH) are left alone."""
    return {name: mirror + value if value.startswith(os.sep) and os.pathsep not in value else value
            for name, value in env.items()}


def _without_prefix(value, prefix: str):
    if isinstance(value, str):
        return value.replace(prefix, "") if prefix in value else value
    if isinstance(value, list):
        return [_without_prefix(item, prefix) for item in value]
    if isinstance(value, dict):
        return {_without_prefix(k, prefix): _without_prefix(v, prefix) for k, v in value.items()}
    return value


def _strip_paths(exc: Exception, prefix: str) -> None:
    exc.args = _without_prefix(list(exc.args), prefix)
    if isinstance(exc, OSError):
        for name in ("filename", "filename2"):
            if isinstance(getattr(exc, name), str):
                setattr(exc, name, _without_prefix(getattr(exc, name), prefix))


_kept_mirror: dict = {}  # the last mirror this process wrote: files, folder, pid
_mirror_lock = threading.Lock()


def _mirror(env, entry: dict, index: dict) -> str:
    """A private folder holding the session's archived files at their original paths, inside
    the archive's folder (native bytes, secrets as recorded, never go to the cache). The last
    one is kept for the next session that needs the same files (the sessions of one archived
    database share them), and removed when the process ends."""
    import shutil  # here: listings import this module, seldom read the archive

    files = entry["files"]
    if _kept_mirror.get("files") == files and os.path.isdir(_kept_mirror["folder"]):
        return _kept_mirror["folder"]
    _drop_kept_mirror()
    root = mirrors_folder(env)
    remove_abandoned_mirrors(root)
    cache.make_private_dirs(root)
    mirror = os.path.realpath(os.path.join(root, f"{os.getpid()}-{os.urandom(8).hex()}"))
    os.mkdir(mirror, cache.PRIVATE_DIR)
    try:
        for path, kind, fid, length in files:
            _materialize(env, index, mirror, path, kind, fid, length)
    except BaseException:
        shutil.rmtree(mirror, ignore_errors=True)
        raise
    _kept_mirror.update(files=files, folder=mirror, pid=os.getpid())
    return mirror


def mirrors_folder(env) -> str:
    return os.path.join(folder(env), MIRRORS)


def _materialize(env, index: dict, mirror: str, path: str, kind: str, fid, length: int) -> None:
    target = os.path.normpath(mirror + os.sep + path)
    if not os.path.isabs(path) or not target.startswith(mirror + os.sep):
        return  # a path leading out of the mirror is no path of a file store
    if kind == "dir":
        cache.make_private_dirs(target)
        return
    record = index["files"].get(fid)
    if record is None:
        raise Damaged(f"the archive holds no data for {path}")
    cache.make_private_dirs(os.path.dirname(target))
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), cache.PRIVATE_FILE)
    try:
        try:
            read_version(env, fid, record, length, lambda data: _write_all(fd, data))
        except Damaged as exc:
            raise Damaged(f"the archived copy of {path} is damaged: {exc}") from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _drop_kept_mirror() -> None:
    """Remove the kept mirror, if this process made it (a forked child inherits the record of
    its parent's)."""
    folder, pid = _kept_mirror.get("folder"), _kept_mirror.get("pid")
    _kept_mirror.clear()
    if folder and pid == os.getpid():
        import shutil  # here: listings import this module, seldom read the archive

        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_drop_kept_mirror)


def remove_abandoned_mirrors(root: str, every: bool = False) -> None:
    """Remove the mirrors of processes that ended without removing theirs (killed); with
    `every`, all of them (`forget`: no copy of a forgotten session may stay)."""
    import shutil  # here: listings import this module, seldom read the archive

    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        pid = name.split("-", 1)[0]
        if every or not pid.isdigit() or not _alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


# the archive's origin -----------------------------------------------------------------------------
class Archived(Origin):
    """The archive origin (discovery/origin.py): a session whose native record is gone,
    translated by its agent's module from its archived bytes (`translate`). Its stamp is its native
    files' fingerprint when archived, and the archived entry's identity beside its translator's
    version, so that a rendering from other archived bytes has another name in the document
    cache; its facts are also those of its store's rendering of the same files (`same_facts`).
    Its cached document depends on no file read in place."""

    __slots__ = ()
    kind = "archive"

    def stamp(self, env, redact: bool = True, known: tuple | None = None) -> list:
        module = agents.load(self.session.agent)
        version = f"{module_version(module)}+archived:{self.session.extra['archived']['identity']}"
        return [fingerprint(self.session, env), version, VERSION, redact]

    def same_facts(self, stamp: list) -> list | None:
        """The stamp (`stamp`) as the store's rendering of the same native files has it."""
        if len(stamp) != 4 or not isinstance(stamp[1], str) or "+archived:" not in stamp[1]:
            return None
        return [stamp[0], stamp[1].split("+archived:", 1)[0], *stamp[2:]]

    def translated(self, module, env) -> dict:
        return translate(module, self.session, env)
