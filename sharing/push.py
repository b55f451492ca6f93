"""`trajectoriz push`: this project's sessions, made shareable (`paths`), written as one commit
of the contributor's ref (`refs`) and pushed to the remote under a lease.

What is pushed: each session of the project as `export` writes it (always redacted), compressed
with zstd, as git objects under `refs/trajectoriz/<contributor>` of the project's repository
(never a branch, a tag, the working tree or a hook), one commit without parent whose tree is

    manifest.json                      what a listing needs of every session (MANIFEST_FORMAT)
    sessions/<short id>.atif.json.zst  one document per session

then `git push --force-with-lease=<ref>:<tip> <remote> <ref>:<ref>`. A push starts from the
remote's ref as it is now (`remote_tip`: `git ls-remote` of that one ref, and a fetch of it when
this repository does not hold its commit): the sessions it holds that this machine does not have
(another machine of the same person, a session an agent deleted here) are carried over, unless
this machine forgot them; the ref is rewritten (one commit, no parent) only while the remote's is
still the commit read (git's lease), else read again and pushed again (ATTEMPTS). Each
contributor has a ref of their own; two machines of one contributor, or two CI jobs of one name,
take turns. A session whose document did not change keeps its blob (the push state remembers
the blob of each rendering), and the tree of a push is computed here before anything is
written: when it is the tree of the remote's ref, nothing is written and nothing sent. The
documents are made shareable first (`paths`: work tree paths relative, the home directory `~`).

A push keeps each document's compressed blob in the document cache, named by its document's
stamp and what its paths were made relative to (`compressed_stamp`), so that a later push (to
another remote, after the push state was lost) does not compress it again.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys

from core import cache
from core.errors import UserError
from discovery import pulled
from discovery.pulled import Objects
from sharing import packfile, paths
from sharing.git import GitFailed, Repository, missing
from sharing.refs import OWN_REFS, OID, PULLED_REFS, chosen_remote, contributor, read_ref, trees, url_of

LEVEL = 1                          # zstd level: 2 % more bytes than level 3, in 60 % of its time
BATCH_BYTES = 32 * 1024 * 1024     # of cached documents held to be compressed at once
STATE_FILE = "push-v2.bin"         # in the cache: each rendering's blob, and what was pushed where
                                   # (v1: blobs with absolute paths)
ATTEMPTS = 5                       # of a push whose ref moved on the remote while it was written


def run_push(args, env) -> int:
    repo = Repository.here(env)
    remote = chosen_remote(repo, args.remote, "push") if not args.dry_run else None
    me = contributor(repo, env, keep=not args.dry_run)
    state = cache.load(env, STATE_FILE)
    mine = state.setdefault(repo.key(), {"blobs": {}, "pushed": {}})
    ref = OWN_REFS + me
    if args.dry_run:  # (the remote's tip as the last pull or push saw it: nothing is fetched)
        tips = repo.tips(OWN_REFS)
        tip = tips.get(PULLED_REFS + me, tips.get(ref, (None,)))[0]
        packed, rendered, _ = _packed(repo, env, mine["blobs"], True)
        _report_dry_run(packed + _carried(repo, env, packed, tip), rendered, me)
        return 0
    tip, tip_tree = remote_tip(repo, remote, me)
    packed, rendered, pack = _packed(repo, env, mine["blobs"], streamed=tip is None)
    url = url_of(repo, remote)
    warned, written = url in mine["pushed"], 0
    for _ in range(ATTEMPTS):
        shared = packed + _carried(repo, env, packed, tip)
        try:
            made, tree = trees(me, shared)
            if tip is not None and tip_tree == tree:
                repo.git("update-ref", ref, tip)
                print(f"Nothing new to push: {len(shared)} session(s) are on {ref} at {remote}.", file=sys.stderr)
                _save_state(env, state, repo, mine, packed)
                return 0
            commit, count = _write(repo, ref, me, shared, made, pack)
        except BaseException:
            if pack is not None:
                pack.abandon()
            raise
        pack, written = None, written + count
        for p in packed:
            p.data = None  # stored: a retry writes its trees and commit only
        if not warned:
            print(f"trajectoriz: pushing this project's sessions (redacted) to {remote} ({url}): whoever "
                  f"can fetch from it can read them. A private remote of their own is the safer choice "
                  f"(`git remote add memory URL`, then `trajectoriz push --remote memory`).", file=sys.stderr)
            warned = True
        if _leased_push(repo, remote, ref, tip):
            break
        tip, tip_tree = remote_tip(repo, remote, me)
    else:
        raise UserError(f"{ref} at {remote} kept changing while this push wrote it (another push of "
                        f"yours, {ATTEMPTS} times): try again")
    repo.git("update-ref", PULLED_REFS + me, commit)  # the remote has it now: as a fetch would see it
    mine["pushed"][url] = commit
    _save_state(env, state, repo, mine, packed)
    print(f"Pushed {len(shared)} session(s) to {remote} as {ref} ({rendered} rendered, "
          f"{written} new object(s)).", file=sys.stderr)
    return 0


def remote_tip(repo: Repository, remote: str, me: str) -> tuple:
    """(commit, its tree) the remote's ref of this contributor names now, held in this
    repository as PULLED_REFS + me (that one ref fetched when this repository does not hold its
    commit); (None, None), and no such ref here, when the remote has none. A push starts from
    it: what it holds that this machine does not is kept (`_carried`), and the push updates the
    ref only while it is still this commit (`_leased_push`)."""
    ref, seen = OWN_REFS + me, PULLED_REFS + me
    try:
        tip = _tip_at(repo, remote, ref)
    except GitFailed as exc:
        raise UserError(f"cannot read {ref} at {remote}: {exc}") from None
    if tip is None:
        if seen in repo.tips(OWN_REFS):
            repo.git("update-ref", "-d", seen)
        return None, None
    if missing(repo, [tip]):
        try:
            repo.git("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, f"+{ref}:{seen}")
        except GitFailed as exc:
            raise UserError(f"cannot fetch {ref} from {remote}: {exc}") from None
    else:
        repo.git("update-ref", seen, tip)
    return repo.tips(OWN_REFS).get(seen, (None, None))


def _tip_at(repo: Repository, remote: str, ref: str) -> str | None:
    """The commit the remote's `ref` names now (`git ls-remote`), None when it has no such ref."""
    listed = repo.git("ls-remote", remote, ref)
    found = [line.split(b"\t")[0] for line in listed.splitlines() if line.endswith(b"\t" + ref.encode())]
    return found[0].decode() if found and OID.fullmatch(found[0]) else None


def _leased_push(repo: Repository, remote: str, ref: str, tip: str | None) -> bool:
    """`ref` pushed to the remote if the remote's ref is still `tip` (None: still absent), as one
    check and update there (git's lease). False when it moved meanwhile (read it again, and
    push again); an error when the remote refuses for another reason."""
    try:
        repo.git("push", "--quiet", f"--force-with-lease={ref}:{tip or ''}", remote, f"{ref}:{ref}")
        return True
    except GitFailed as exc:
        refused = exc
    try:
        moved = _tip_at(repo, remote, ref) != tip
    except GitFailed:
        moved = False
    if moved:
        return False
    raise UserError(f"the remote {remote} refused the push of {ref}: {refused}")


def _save_state(env, state: dict, repo: Repository, mine: dict, packed: list) -> None:
    """The blob of each session's current rendering (the others dropped), and what was pushed."""
    mine["blobs"] = {p.key: [p.stamp, p.oid, p.entry["bytes"], p.redactions]
                     for p in packed if p.key is not None}
    state[repo.key()] = mine
    cache.save(env, STATE_FILE, state)


def _packed(repo: Repository, env, blobs: dict, count: bool = False,
            streamed: bool = False) -> tuple[list, int, "packfile.Indexed | None"]:
    """Every session of this machine to push, and how many were rendered now: the project's own
    (live and archived, the forgotten left out), their blobs reused while their rendering is the
    one the state knows and the repository still holds it. `count`: each session's redactions
    counted (rendered again, unless the state knows them). `streamed`: the blobs rendered now
    written to a pack as they come (git stores it on another core meanwhile; `_write` ends it),
    returned third (None when nothing was rendered)."""
    from rendering import documents

    found, todo = [], []
    sessions, discovered = own_sessions(repo, env)
    for session in sessions:
        key = documents.cache_key(session)
        taken = documents.stamps(session, env, discovered.known(session), discovered.stats)
        kept = blobs.get(key)
        if kept and kept[0] == taken[0] and not (count and kept[3] is None):
            entry = manifest_entry(session, repo.root, kept[2], env)
            found.append(((session, taken), Packed(entry, kept[1], key=key, stamp=taken[0], redactions=kept[3])))
        else:
            todo.append((session, taken))
    lost = set(missing(repo, [p.oid for _, p in found]))
    todo += [item for item, p in found if p.oid in lost]
    pack = packfile.Indexed(repo, len(todo) + 4) if streamed and todo else None  # + manifest, 2 trees, commit
    try:
        packed = [p for _, p in found if p.oid not in lost] + _rendered(todo, env, repo.root, count, pack)
        return packed, len(todo), pack
    except BaseException:
        if pack is not None:
            pack.abandon()
        raise


def _rendered(items: list, env, root: str, count: bool, into: "packfile.Indexed | None" = None) -> list:
    """`Packed` of each session (with its `documents.stamps`), compressed now or before: those a
    push compressed before (the cache keeps them), those whose document is in the cache
    (compressed here, on zstd's threads: cheaper than handing them to other processes), the
    others translated on every core. `count`: every document read, to count its redactions.
    `into`: each blob added to that pack as soon as it is read or made."""
    from core import parallel
    from rendering import doccache, documents

    def added(data: bytes) -> None:
        if into is not None:
            into.add("blob", data)

    before = {}
    for item in [] if count else items:
        before[id(item)] = found = compressed_before(item, env, root)
        if found:
            added(found[0])
    compressed = [item for item in items if before.get(id(item))]
    ready = [] if count else [item for item in items if not before.get(id(item)) and
                              doccache.has(env, documents.cache_key(item[0]), item[0].short_id, item[1][1])]
    chosen = set(map(id, compressed + ready))
    others = [item for item in items if id(item) not in chosen]
    found = []
    progress = parallel.Progress(len(items), "compressing")
    try:
        done = itertools.chain((before[id(item)] for item in compressed), packed_from_cache(ready, env, root),
                               parallel.ordered(pack, others, (env, count, root)))
        for n, ((session, taken), (data, size, redactions)) in enumerate(zip(compressed + ready + others, done)):
            if n >= len(compressed):  # (those were added as they were read)
                added(data)
            entry = manifest_entry(session, root, size, env)
            found.append(Packed(entry, packfile.blob_id(data), data, documents.cache_key(session), taken[0], redactions))
            progress.step()
    finally:
        progress.clear()
    return found


def own_sessions(repo: Repository, env) -> tuple[list, "catalog.Catalog"]:
    """The project's sessions a push publishes: what `export` of the work tree writes, less the
    pulled ones and those `forget` was asked to forget; and the discovery that found them."""
    from discovery import archive, catalog

    found = catalog.discover(catalog.looking_in(env, repo.root), within=repo.root)
    forgotten = archive.load(env)["forgotten"]
    return [s for s in catalog.Scope(repo.root, env).filter(found.sessions)
            if catalog.origin(s).contributor is None and not (forgotten and archive.key_of(s) in forgotten)], found


def _carried(repo: Repository, env, packed: list, tip: str | None) -> list:
    """The sessions of the remote's ref (its commit `tip`, as `remote_tip` read it) that this
    machine does not have (another machine of this contributor's, a session an agent deleted
    here), unless forgotten here or not documents: their blobs as they are."""
    from discovery import archive

    if tip is None:
        return []
    forgotten = archive.load(env)["forgotten"]
    here = {(p.entry["agent"], p.entry["native_id"]) for p in packed}
    found: dict = {p.entry["id"]: None for p in packed}  # an id this machine's sessions have is theirs
    with Objects(["-C", repo.root], repo.env) as objects:
        for entry, oid in read_ref(repo, tip, objects, [], here):
            if entry["id"] in found:
                continue
            if forgotten and any(archive.key_of(s) in forgotten for s in _places(entry, repo.root)):
                continue
            if _valid_document(objects, oid):
                found[entry["id"]] = Packed(entry, oid)
    return [p for p in found.values() if p is not None]


def _valid_document(objects: Objects, oid: str) -> bool:
    try:
        pulled.checked_document(objects.read(oid, "blob", pulled.MAX_BLOB))
        return True
    except ValueError:
        return False


def _places(entry: dict, here: str) -> list:
    """The entry's session where it was recorded and where it sits in this clone: `forget` of
    either keeps it out of later pushes."""
    return [pulled.session_of("", "", entry, root, "") for root in {entry["root"] or here, here}]


def _write(repo: Repository, ref: str, me: str, packed: list, made: list, pack: packfile.Indexed | None = None) -> tuple[str, int]:
    """The new blobs, the trees `made` and a commit without parent of the root tree, stored as
    one pack (`pack`, when the blobs were added to it already), then `ref` set (rewritten) to
    the commit; (the commit, how many blobs and commits were written)."""
    import time

    if pack is None:
        new = {p.oid: p.data for p in packed if p.data is not None}
        pack = packfile.Indexed(repo, len(new) + len(made) + 1)
        for data in new.values():
            pack.add("blob", data)
    message = f"trajectoriz: {len(packed)} session(s) shared by {me}\n".encode()
    who = b"trajectoriz <trajectoriz@localhost> %d +0000" % time.time()
    body = b"tree %s\nauthor %s\ncommitter %s\n\n%s" % (packfile.object_id("tree", made[-1][1]).encode(),
                                                         who, who, message)
    for kind, data, level in made + [("commit", body, 1)]:
        pack.add(kind, data, level)
    commit = packfile.object_id("commit", body)
    try:
        pack.stored()
        repo.git("update-ref", ref, commit)
    except GitFailed as exc:
        raise UserError(f"git could not write {ref}: {exc}") from None
    return commit, sum(p.data is not None for p in packed) + 1


def _report_dry_run(packed: list, rendered: int, me: str) -> None:
    from core.output import cell, table

    rows = []
    for p in sorted(packed, key=lambda p: p.entry["id"]):
        redactions = p.redactions or {}
        said = ", ".join(f"{kind} {count}" for kind, count in sorted(redactions.items()))
        counted = f"{sum(redactions.values())}" + (f" ({said})" if said else "") if p.redactions is not None else "—"
        rows.append([f"`{p.entry['id']}`", p.entry["agent"], str(p.entry["bytes"]), counted,
                     "here" if p.key is not None else "already pushed", cell(p.entry["title"] or "", 60)])
    total = sum(p.entry["bytes"] for p in packed)
    print(f"## Would push {len(packed)} session(s), {total} bytes of documents before compression, "
          f"as {OWN_REFS}{me} (dry run: nothing written)\n")
    print(table(["ID", "Agent", "Bytes", "Redactions", "From", "First message"], rows))


class Packed:
    """One session as pushed: its manifest entry and its blob (`data` None when the blob is
    reused: the push state's, or a carried entry's); `key`, `stamp` and `redactions` (counts
    per kind, None when not counted): its rendering's, for the push state and `--dry-run`
    (None for a carried entry)."""

    def __init__(self, entry: dict, oid: str, data: bytes | None = None, key: str | None = None,
                 stamp: list | None = None, redactions: dict | None = None):
        self.entry = entry
        self.oid = oid
        self.data = data
        self.key = key
        self.stamp = stamp
        self.redactions = redactions


def pack(item: tuple, env, count: bool, root: str) -> tuple:
    """(compressed document, its size, redactions) of one session, rendered as export writes
    it and made shareable (`paths`: `root` the work tree's top), a pool worker's job; `item`:
    the session and its `documents.stamps`. Its redactions are counted (None otherwise) only
    when asked: a document from the cache is then parsed."""
    from rendering import documents

    session, (_, valid) = item
    if count:
        doc, data = documents.document(session, env, True, valid)
        redactions = dict((doc.get("extra") or {}).get("redactions") or {})
    else:
        data, redactions = documents.render(session, env, True, valid), None
    data = shareable(root, env).document(data, session.source)
    compressed = _compressor().compress(data)
    keep_compressed(item, env, compressed, root)
    return compressed, len(data), redactions


def shareable(root: str, env) -> paths.Shareable:
    """The rewriting of paths of a push from the work tree `root` (`paths`)."""
    return _shareable(root, env.get("HOME") or "")


@functools.lru_cache(maxsize=None)
def _shareable(root: str, home: str) -> paths.Shareable:
    return paths.Shareable(root, {"HOME": home})


def compressed_stamp(valid: list, root: str, env) -> list:
    """The stamp a compressed document is kept under: its document's, and what its paths were
    made relative to (a push from another work tree, or another HOME, shares other bytes)."""
    return [*valid, ["shared", root, env.get("HOME") or ""]]


def keep_compressed(item: tuple, env, compressed: bytes, root: str) -> None:
    """The compressed document in the cache (`doccache.COMPRESSED`, named by its document's
    stamp and `root`), when its document was kept (a failure is not): the next push that has
    it, of this project or after the push state was lost, reads it instead of compressing
    again. Done where a document is rendered now (the pool's workers), whose cost it adds
    little to."""
    from rendering import doccache, documents

    session, (_, valid) = item
    key = documents.cache_key(session)
    if doccache.has(env, key, session.short_id, valid):
        doccache.put(env, key, session.short_id, compressed_stamp(valid, root, env), compressed, doccache.COMPRESSED)


def compressed_before(item: tuple, env, root: str) -> tuple | None:
    """(compressed document, its size, None) as a push from `root` kept it in the cache, None
    when none was (or it is not a zstd frame that says its size)."""
    import zstandard

    from rendering import doccache, documents

    session, (_, valid) = item
    data = doccache.get(env, documents.cache_key(session), session.short_id, compressed_stamp(valid, root, env),
                        doccache.COMPRESSED)
    try:
        size = zstandard.frame_content_size(data) if data is not None else -1
    except zstandard.ZstdError:
        size = -1
    return (data, size, None) if size >= 0 else None


def packed_from_cache(items: list, env, root: str) -> list:
    """`pack` of sessions whose documents are in the cache, compressed on every core (zstd's
    threads) a batch at a time. They are not kept compressed: creating a file per document
    costs more here than compressing it (1.5 s against 0.5 s for 1,846 in bench/NOTES.md)."""
    found = []
    for batch in _cached_batches(items, env, root):
        done = _compressor().multi_compress_to_buffer(batch, threads=-1)
        found += [(done[n].tobytes(), len(data), None) for n, data in enumerate(batch)]
    return found


def _cached_batches(items: list, env, root: str):
    """The sessions' cached documents, made shareable, in lists of about BATCH_BYTES."""
    from rendering import documents

    batch, held, made = [], 0, shareable(root, env)
    for session, (_, valid) in items:
        batch.append(made.document(documents.render(session, env, True, valid), session.source))
        held += len(batch[-1])
        if held >= BATCH_BYTES:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


@functools.lru_cache(maxsize=None)
def _compressor():
    """One compressor per process (making one costs more than compressing a small document)."""
    import zstandard

    return zstandard.ZstdCompressor(level=LEVEL)


def manifest_entry(session, root: str, size: int, env) -> dict:
    """What the manifest says of a session: its working directory relative to the work tree's
    top `root` (which is not said: it names the pusher's folders), its first message made
    shareable as its document is (`paths`)."""
    from discovery import catalog

    cwd = session.cwd
    inside = cwd and cwd.startswith(root + "/") and "/." not in cwd[len(root):]  # (normalized: a string cut)
    relative = None if cwd == root else cwd[len(root) + 1:] if inside else os.path.relpath(cwd, root) if cwd else None
    return {"id": session.short_id, "agent": session.agent, "native_id": catalog.shown_id(session),
            "started": session.started, "cwd": None if relative in (None, ".") else relative,
            "root": None, "title": shareable(root, env).text(session.title), "model": session.model,
            "bytes": size}
