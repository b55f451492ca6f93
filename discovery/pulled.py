"""Pulled sessions: one more source of discovery, as the archive is (`archive`).

`trajectoriz pull` (sharing/pull.py) fetches the remote's `refs/trajectoriz/*` refs into the
repository (`refs/trajectoriz/remote/*`) and checks their manifests; it keeps, for each
repository, a listing of the sessions they hold: `<cache>/shared/<repository>/listing.bin`
(marshal: {"format": 2, "root", "refs": contributor -> commit, "sessions": [[contributor, blob
id, manifest entry], ...]}). The repository is named by its git folder, which every work tree of
it shares. The documents stay in git's own object store, where the fetch put them.

Discovery adds the pulled sessions of the repository around the project to the stores' (a
session also found in a store here is listed once, from the store): each a `Session` marked
`extra["shared"]` (its contributor, its blob, the repository's git folder, the pusher's work
tree and this one), its working directory the same place in this work tree as in the pusher's,
its id the pusher's. Its document is the pushed one, read from git when something reads it
(one `git cat-file --batch` per process) and checked then, as a native session is translated
when read: a blob that is not a document (too big, not zstd, not JSON, not ATIF) gives a failure
document that says why, and a warning.
"""

from __future__ import annotations

import os
import sys
import threading

from core import cache
from discovery.origin import Origin

FOLDER = "shared"
LISTING = "listing.bin"
MAX_BLOB = 256 * 1024 * 1024       # bytes of one compressed document
MAX_DOCUMENT = 256 * 1024 * 1024   # bytes of one document, decompressed
LISTING_FORMAT = 2                 # 1: documents copied out of git at the pull
GIT_SECONDS = 600                  # a read of git's objects (not the network) is stopped after


def marked(session) -> bool:
    """Whether discovery listed this session from a pulled ref (`join`)."""
    return "shared" in session.extra


def listing_name(repo_key: str) -> str:
    """The listing a pull keeps of the repository, as a name in trajectoriz's cache."""
    return os.path.join(FOLDER, repo_key, LISTING)


def load_listing(env, repo_key: str) -> dict:
    """The listing a pull left of the repository (empty when there is none), parsed once per
    process while the file does not change (`cache.load_shared`: the mount discovers again every
    few seconds). Never modify what it returns."""
    found = cache.load_shared(env, listing_name(repo_key))
    return found if found.get("format") == LISTING_FORMAT else {}


def session_of(by: str, oid: str, entry: dict, here: str, git_dir: str):
    """The session of a pulled entry in this clone (`here`): its working directory the same
    place in this work tree as in the pusher's; its document the blob `oid` of the repository
    whose git folder is `git_dir` (its source names both)."""
    from agents.base import Session

    cwd = os.path.join(here, entry["cwd"]) if entry["cwd"] else here
    return Session(agent=entry["agent"], native_id=entry["native_id"], source=f"{git_dir}:{oid}",
                   started=entry["started"], cwd=cwd, title=entry["title"], model=entry["model"],
                   extra={"shared": {"by": by, "oid": oid, "git": git_dir, "root": entry["root"], "here": here,
                                     "bytes": entry["bytes"]}},
                   short_id=entry["id"])


def sessions(env, root: str, names=None) -> list:
    """The pulled sessions of the repository whose work tree is `root` (none when it is no work
    tree, or nothing was pulled into it), those of the agents `names` when given, the forgotten
    ones left out (`forget` of a pulled session hides it here)."""
    from discovery import archive

    common = common_dir(root)
    if common is None:
        return []
    listing = load_listing(env, repository_key(common))
    if not listing.get("sessions"):
        return []
    found = [session_of(by, oid, entry, root, common) for by, oid, entry in listing["sessions"]
             if names is None or entry["agent"] in names]
    forgotten = archive.load(env)["forgotten"]
    return [s for s in found if archive.key_of(s) not in forgotten] if forgotten else found


def repository_key(common: str) -> str:
    """The name of a repository's folder in trajectoriz's cache, from its git folder (the one
    its work trees share)."""
    from core.hashes import sha256

    return sha256(os.fsencode(common)).hexdigest()[:24]


def common_dir(root: str) -> str | None:
    """The repository folder of the work tree `root` (`git rev-parse --git-common-dir`, found
    without running git); None when `root` is no work tree."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return os.path.realpath(dot_git)
    try:
        with open(dot_git, "rb") as handle:
            line = handle.read(4096).split(b"\n")[0]
    except OSError:
        return None
    if not line.startswith(b"gitdir: "):
        return None
    gitdir = os.path.join(root, os.fsdecode(line[len(b"gitdir: "):].strip()))
    try:
        with open(os.path.join(gitdir, "commondir"), "rb") as handle:
            return os.path.realpath(os.path.join(gitdir, os.fsdecode(handle.read(4096).strip())))
    except OSError:
        return os.path.realpath(gitdir)


def stamp(session, redact: bool = True) -> list:
    """What a rendering of a pulled session is valid for, shaped as a live session's: its blob's
    id names its bytes; in place of its files' fingerprint, its document's size and its start
    (the same in every clone: the mount's time of the file)."""
    from core.version import VERSION

    shared = session.extra["shared"]
    started = max(-cache.NS_LIMIT, min(int((session.started or 0) * 1e9), cache.NS_LIMIT))
    return [[[shared["bytes"], started]], "shared:" + shared["oid"], VERSION, redact]


def document(session, env) -> dict:
    """A pulled session's document as it was pushed: its blob read from git and checked.
    Raises ValueError when it cannot be read or is not a document."""
    shared = session.extra["shared"]
    return checked_document(read_blob(shared["git"], shared["oid"], env))


def read_blob(git_dir: str, oid: str, env) -> bytes:
    """A blob of the repository whose git folder is `git_dir`, of at most MAX_BLOB bytes, read
    through this process's `git cat-file --batch` of that repository (started at the first
    read; one at a time, as the mount's threads may ask together; started again after a failed
    read, which may have left it half way through an object)."""
    with _readers_lock:
        key = (os.getpid(), git_dir)  # a pool worker has a process of its own
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = Objects(["--git-dir", git_dir], env)
        try:
            return reader.read(oid, "blob", MAX_BLOB)
        except (ValueError, OSError) as exc:
            if not isinstance(exc, WrongObject):
                _readers.pop(key).close()
            raise ValueError(str(exc)) from None


_readers: dict = {}  # (process id, git folder) -> Objects
_readers_lock = threading.Lock()


class WrongObject(ValueError):
    """An object read whole that is not what was asked for (the reader is still in step)."""


class Objects:
    """One `git cat-file --batch` process: objects read by id, each after its size was checked,
    each read stopped after GIT_SECONDS."""

    def __init__(self, git_args: list, env):
        import subprocess

        self.process = subprocess.Popen(["git", *git_args, "cat-file", "--batch"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, env=dict(env))

    def read(self, oid: str, kind: str, limit: int) -> bytes:
        """The object's content; ValueError when it is missing (WrongObject), of another type or
        bigger than `limit` (read through without being kept), or git fails or is too slow."""
        timer = threading.Timer(GIT_SECONDS, self.process.kill)
        timer.start()
        try:
            return self._read(oid, kind, limit)
        finally:
            timer.cancel()
            timer.join()  # gone: a process with other threads runs no pool (core/parallel.py)

    def _read(self, oid: str, kind: str, limit: int) -> bytes:
        self.process.stdin.write(oid.encode() + b"\n")
        self.process.stdin.flush()
        header = self.process.stdout.readline(200).split()
        if len(header) == 2 and header[1] == b"missing":
            raise WrongObject("missing from the repository")
        if len(header) != 3 or not header[2].isdigit():
            raise ValueError("git cat-file failed")
        size = int(header[2])
        skip = size > limit or header[1] != kind.encode()
        data = _read_exactly(self.process.stdout, size, keep=not skip)
        self.process.stdout.read(1)  # the newline after each object
        if header[1] != kind.encode():
            raise WrongObject(f"a {header[1].decode('ascii', 'replace')}, not a {kind}")
        if skip:
            raise WrongObject(f"{size} bytes, more than the {limit} read of one")
        return data

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.process.kill()
        self.process.wait()
        self.process.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _read_exactly(stream, size: int, keep: bool) -> bytes:
    parts, left = [], size
    while left:
        piece = stream.read(min(left, 1024 * 1024))
        if not piece:
            raise ValueError("cut short")
        left -= len(piece)
        if keep:
            parts.append(piece)
    return b"".join(parts)


def as_pushed(session, paths: tuple) -> tuple:
    """Paths of this clone as a pulled session's documents name them, for `blame`: relative to
    the work tree's top (as a push writes them, sharing/paths.py), and under the pusher's work
    tree for a document an older version pushed with its absolute paths; a live session's
    paths as they are."""
    if not marked(session):
        return paths
    shared = session.extra["shared"]
    here = shared["here"].rstrip("/") + "/"
    inside = [p[len(here):] for p in paths if p.startswith(here)]
    older = [shared["root"].rstrip("/") + "/" + p for p in inside] if shared["root"] else []
    return tuple(dict.fromkeys([*inside, *older, *(p for p in paths if not p.startswith(here))]))


def checked_document(data: bytes) -> dict:
    """The document a pulled blob holds; ValueError when it is not zstd, bigger than
    MAX_DOCUMENT once decompressed, not JSON or not an ATIF document."""
    import io

    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
            text = reader.read(MAX_DOCUMENT + 1)
    except zstandard.ZstdError as exc:
        raise ValueError(f"not zstd: {exc}") from None
    if len(text) > MAX_DOCUMENT:
        raise ValueError(f"more than {MAX_DOCUMENT} bytes once decompressed")
    doc = _json(text)
    if not (isinstance(doc, dict) and isinstance(doc.get("schema_version"), str)
            and isinstance(doc.get("steps"), list) and isinstance(doc.get("agent"), dict)):
        raise ValueError("not an ATIF document")
    return doc


def _json(data: bytes):
    from atif.serialize import loads

    return loads(data)


class Pulled(Origin):
    """The pulled origin (discovery/origin.py): a session a teammate pushed, read from the ref a
    pull fetched (`document`). Its stamp is its blob's id, its document's size and its start
    (`stamp`); its document comes finished, as pushed, and checked when read: one that is not a
    document gives the failure document, and a warning (a listing showed it). Its agent deletes
    nothing of it here."""

    __slots__ = ()
    kind = "shared"
    finished = True

    @property
    def contributor(self) -> str:
        return self.session.extra["shared"]["by"]

    def stamp(self, env, redact: bool = True, known: tuple | None = None) -> list:
        return stamp(self.session, redact)

    def document(self, env) -> dict:
        try:
            return document(self.session, env)
        except ValueError as exc:
            import agents
            from core.output import printable

            reason = f"the document {self.contributor} shared is skipped: {exc}"
            print(f"trajectoriz: warning: {self.session.short_id}: {printable(reason)}", file=sys.stderr)
            return self.failure_document(agents.load(self.session.agent), reason)
