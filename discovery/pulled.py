"""Pulled sessions: one more source of discovery, as the archive is (`archive`).

`trajectoriz pull` (sharing/remote.py) keeps, for each repository, the documents its remote's
`refs/trajectoriz/*` refs hold that passed its checks (compressed as they came), and a listing
of them: `<cache>/shared/<repository>/listing.bin` (marshal: {"format": 1, "root", "refs":
contributor -> commit, "sessions": [[contributor, blob id, manifest entry], ...]}) beside
`<blob id>.zst`. The repository is named by its git folder, which every work tree of it shares.

Discovery adds the pulled sessions of the repository around the project to the stores' (a
session also found in a store here is listed once, from the store): each a `Session` marked
`extra["shared"]` (its contributor, its blob, the pusher's work tree and this one), its working
directory the same place in this work tree as in the pusher's, its id the pusher's. Its
document is the pushed one, served as it came (after the same checks again).
"""

from __future__ import annotations

import os

from core import cache

FOLDER = "shared"
LISTING = "listing.bin"
MAX_BLOB = 256 * 1024 * 1024       # bytes of one compressed document
MAX_DOCUMENT = 256 * 1024 * 1024   # bytes of one document, decompressed


def marked(session) -> bool:
    """Whether discovery listed this session from a pulled ref (`join`)."""
    return "shared" in session.extra


def contributor_of(session) -> str | None:
    return session.extra["shared"]["by"] if marked(session) else None


def folder(env, repo_key: str) -> str:
    return os.path.join(cache.cache_dir(env), FOLDER, repo_key)


def load_listing(where: str) -> dict:
    """The listing a pull left in `where` (empty when there is none), parsed once per process
    while the file does not change (the mount discovers again every few seconds). Never modify
    what it returns."""
    import marshal

    path = os.path.join(where, LISTING)
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            known = _listings.get(path)
            if known is not None and known[0] == (st.st_ino, st.st_size, st.st_mtime_ns):
                return known[1]
            found = marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    found = found if isinstance(found, dict) and found.get("format") == 1 else {}
    _listings[path] = ((st.st_ino, st.st_size, st.st_mtime_ns), found)
    return found


_listings: dict = {}  # listing path -> ((inode, size, mtime_ns), what was parsed)


def session_of(by: str, oid: str, entry: dict, here: str, where: str):
    """The session of a pulled entry in this clone (`here`): its working directory the same
    place in this work tree as in the pusher's; its document the kept blob."""
    from agents.base import Session

    cwd = os.path.join(here, entry["cwd"]) if entry["cwd"] else here
    return Session(agent=entry["agent"], native_id=entry["native_id"], source=os.path.join(where, oid + ".zst"),
                   started=entry["started"], cwd=cwd, title=entry["title"], model=entry["model"],
                   extra={"shared": {"by": by, "oid": oid, "root": entry["root"], "here": here}},
                   short_id=entry["id"])


def sessions(env, root: str, names=None) -> list:
    """The pulled sessions of the repository whose work tree is `root` (none when it is no work
    tree, or nothing was pulled into it), those of the agents `names` when given, the forgotten
    ones left out (`forget` of a pulled session hides it here)."""
    from discovery import archive

    common = common_dir(root)
    if common is None:
        return []
    listing = load_listing(folder(env, repository_key(common)))
    if not listing.get("sessions"):
        return []
    where = folder(env, repository_key(common))
    found = [session_of(by, oid, entry, root, where) for by, oid, entry in listing["sessions"]
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
    """What a rendering of a pulled session is valid for, shaped as a live session's: the kept
    blob's fingerprint (its mtime is when it was pulled) and its id."""
    from core.version import VERSION

    return [cache.fingerprint([session.source]), "shared:" + session.extra["shared"]["oid"], VERSION, redact]


def document(session) -> dict:
    """A pulled session's document as it was pushed: its kept blob, checked again. Raises
    OSError or ValueError when it cannot be read."""
    with open(session.source, "rb") as handle:
        data = handle.read(MAX_BLOB + 1)
    if len(data) > MAX_BLOB:
        raise ValueError(f"more than {MAX_BLOB} bytes")
    return checked_document(data)


def as_pushed(session, paths: tuple) -> tuple:
    """Paths of this clone as the pusher's work tree named them (a pulled session's documents
    name the pusher's files), for `blame`; a live session's paths as they are."""
    if not marked(session) or not session.extra["shared"]["root"]:
        return paths
    shared = session.extra["shared"]
    here = shared["here"].rstrip("/") + "/"
    return tuple(shared["root"].rstrip("/") + "/" + p[len(here):] if p.startswith(here) else p for p in paths)


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
