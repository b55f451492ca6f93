"""`trajectoriz push` and `trajectoriz pull`: a project's sessions shared through its own git remote.

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

What is pulled: `git fetch --prune <remote> +refs/trajectoriz/*:refs/trajectoriz/remote/*`; each
ref's tree and manifest are read through `git cat-file`, every one untrusted (a ref that is not
a commit, a tree not ours, a name that is not a contributor's, a manifest too big or not ours,
an entry whose blob is missing or too big: skipped with a warning, each read bounded); a listing
of the entries that pass is kept in trajectoriz's cache (`shared/<repository>/`, 0700/0600) and
read by discovery (`discovery.pulled`): the pulled sessions of the repository around a project
are listed with the project's own, the contributor beside them, their working directory the
same place in this clone as in the pusher's. Their documents stay in git's objects, read and
checked (zstd, bounded, JSON, ATIF) when something reads one, as a native session is translated
only when read.

A push keeps each document's compressed blob in the document cache, named by its document's
stamp and what its paths were made relative to (`compressed_stamp`), so that a later push (to
another remote, after the push state was lost) does not compress it again.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import sys
import threading

from core import cache
from core.errors import UserError
from discovery import pulled
from discovery.pulled import Objects
from sharing import packfile, paths

OWN_REFS = "refs/trajectoriz/"
PULLED_REFS = "refs/trajectoriz/remote/"
MANIFEST = "manifest.json"
SESSIONS = "sessions"
SUFFIX = ".atif.json.zst"
MANIFEST_FORMAT = "trajectoriz-shared-1"
LEVEL = 1                          # zstd level: 2 % more bytes than level 3, in 60 % of its time
BATCH_BYTES = 32 * 1024 * 1024     # of cached documents held to be compressed at once
STATE_FILE = "push-v2.bin"         # in the cache: each rendering's blob, and what was pushed where
                                   # (v1: blobs with absolute paths)
ATTEMPTS = 5                       # of a push whose ref moved on the remote while it was written

# Bounds on what is read of a remote (every byte of it is untrusted).
MAX_REFS = 1000                    # contributors read from one pull
MAX_LISTED = 16 * 1024 * 1024      # bytes of `git ls-tree` output read for one ref
MAX_MANIFEST = 64 * 1024 * 1024    # bytes of one manifest
WARNINGS_SHOWN = 10                # of one ref's: the rest are counted

NOBODY = "someone-e3b0c4"           # what older versions made of no git identity at all
CONTRIBUTOR = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
SHORT_ID = re.compile(r"[a-z]{2}-[0-9a-f]{8,64}")
OID = re.compile(rb"[0-9a-f]{40}")


# git ----------------------------------------------------------------------------------------------
class GitFailed(Exception):
    """A git command that exited non-zero; the message is its last line on stderr."""


class Repository:
    """The git repository around the current directory, driven through the user's own `git`."""

    def __init__(self, root: str, common: str, env):
        self.root = root            # the work tree's top
        self.common = common        # the repository's folder shared by its work trees
        self.env = dict(env)        # what git runs with: the user's (their config, credentials)
        self._config: dict | None = None

    @classmethod
    def here(cls, env) -> "Repository":
        try:
            out = git_output(["rev-parse", "--show-toplevel", "--git-common-dir"], os.getcwd(), env)
        except GitFailed:
            raise UserError("not in a git work tree: push and pull share a project's sessions "
                            "through its own git repository") from None
        root, common = out.decode("utf-8", "surrogateescape").splitlines()[:2]
        return cls(os.path.realpath(root), os.path.realpath(os.path.join(root, common)), env)

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        return git_output(list(args), self.root, self.env, stdin)

    def config(self, name: str) -> str | None:
        """A setting of the repository's git config (its own, the user's, the system's), all of
        them read at once, the first time one is asked for."""
        return self._settings().get(name) or None

    def remotes(self) -> list:
        """The names of the repository's remotes (those with a URL)."""
        return sorted(key[len("remote."):-len(".url")] for key in self._settings()
                      if key.startswith("remote.") and key.endswith(".url"))

    def _settings(self) -> dict:
        if self._config is None:
            try:
                listed = self.git("config", "-z", "--list").decode("utf-8", "replace")
            except GitFailed:
                listed = ""
            self._config = dict(item.partition("\n")[::2] for item in listed.split("\0") if item)
        return self._config

    def set_config(self, name: str, value: str) -> None:
        self.git("config", name, value)
        self._config = None

    def tips(self) -> dict:
        """ref -> (commit, its tree) of the refs under refs/trajectoriz/ that are commits."""
        listed = self.git("for-each-ref", "--format=%(refname) %(objecttype) %(objectname) %(tree)", OWN_REFS)
        found = {}
        for line in listed.decode("utf-8", "replace").splitlines():
            fields = line.split(" ")
            if len(fields) == 4 and fields[1] == "commit":
                found[fields[0]] = (fields[2], fields[3])
        return found

    def key(self) -> str:
        """The name of this repository's folder in trajectoriz's cache."""
        return pulled.repository_key(self.common)


def git_output(args: list, where: str, env, stdin: bytes | None = None) -> bytes:
    """`git -C where ARGS`'s output; GitFailed with its last line of stderr when it fails."""
    return git_finished(git_started(args, where, env, stdin is not None), args, stdin)


def git_started(args: list, where: str, env, feeding: bool = False, **outputs):
    """`git -C where ARGS` started (`git_finished` waits for it); its input the user's unless
    `feeding` (a prompt for credentials reads the terminal); `outputs`: its stdout and stderr,
    pipes unless given."""
    import subprocess

    try:
        return subprocess.Popen(["git", "-C", where, *args], stdin=subprocess.PIPE if feeding else None,
                                **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **outputs},
                                env=dict(env))
    except FileNotFoundError:
        raise UserError("git is not installed (or not on PATH): push and pull run the git program") from None


def git_finished(process, args: list, stdin: bytes | None = None) -> bytes:
    out, err = process.communicate(stdin)
    if process.returncode != 0:
        raise GitFailed(_reason(err) or f"git {args[0]} exited with status {process.returncode}")
    return out


def _reason(stderr: bytes) -> str:
    """What a failed git command says, on one line: the remote's own words when it gave some (a
    hook's message), else git's last line."""
    from core.output import printable

    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    said = [line[len("remote:"):].strip() for line in lines if line.startswith("remote:")]
    return printable("; ".join(filter(None, said)) or (lines[-1] if lines else ""))[:400]


def bounded_output(repo: Repository, args: list, limit: int) -> bytes | None:
    """A git command's output, None when it is longer than `limit` (the command is stopped) or
    the command fails or runs longer than pulled.GIT_SECONDS."""
    import subprocess

    process = subprocess.Popen(["git", "-C", repo.root, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=repo.env)
    timer = threading.Timer(pulled.GIT_SECONDS, process.kill)
    timer.start()
    try:
        data = process.stdout.read(limit + 1)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        timer.cancel()
    return None if len(data) > limit or (process.returncode not in (0, -9) and not data) else data


# remotes and contributors ---------------------------------------------------------------------------
def chosen_remote(repo: Repository, named: str | None, needed_for: str) -> str:
    """The remote named now (then kept in the repository's config as `trajectoriz.remote`), else
    the one kept; for a pull (which sends nothing), else the repository's only remote, kept
    for no later push; an error when there is none, or git knows no such remote."""
    remote = named or repo.config("trajectoriz.remote") or (needed_for == "pull" and only_remote(repo))
    if not remote:
        raise UserError(f"no remote named yet: run `trajectoriz {needed_for} --remote NAME` once (a "
                        f"remote of `git remote -v`; it is kept in this repository's git config)")
    if url_of(repo, remote) is None:
        raise UserError(f"this repository has no remote {remote!r} (`git remote -v` lists them)")
    if named and named != repo.config("trajectoriz.remote"):
        repo.set_config("trajectoriz.remote", named)
    return remote


def only_remote(repo: Repository) -> str | None:
    """The repository's remote when it has exactly one (a fresh clone's `origin`)."""
    names = repo.remotes()
    return names[0] if len(names) == 1 else None


def url_of(repo: Repository, remote: str) -> str | None:
    return repo.config(f"remote.{remote}.url")


def contributor(repo: Repository, env, keep: bool = True) -> str:
    """Whose ref a push writes: `trajectoriz.contributor` of the git config (or the variable
    TRAJECTORIZ_CONTRIBUTOR, for a CI job); else made once from the user's git identity (their
    name's letters and a hash of their email, or of their name when they have no email, so that
    two people of one name do not share a ref) and kept in the repository's config. Without
    any identity there is no name of theirs to make: a name made of nothing would be everyone's
    (older versions kept `someone-e3b0c4`, the hash of the empty string: not taken as a name)."""
    named = env.get("TRAJECTORIZ_CONTRIBUTOR") or repo.config("trajectoriz.contributor")
    if named and named != NOBODY:
        if not CONTRIBUTOR.fullmatch(named) or named == "remote":
            raise UserError(f"contributor {named!r}: use lowercase letters, digits, - and _ (at most 64)")
        return named
    from core.hashes import sha256

    email, name = (repo.config("user.email") or "").strip(), (repo.config("user.name") or "").strip()
    if not (email or name):
        raise UserError("no git identity to name your ref after: set one (`git config --global user.email "
                        "YOU@EXAMPLE.ORG` and user.name) or TRAJECTORIZ_CONTRIBUTOR=NAME (a CI job: the same "
                        "name at every run)")
    letters = re.sub(r"[^a-z0-9]+", "-", (name or email.partition("@")[0]).lower()).strip("-")[:40] or "someone"
    made = f"{letters}-{sha256((email or name).encode()).hexdigest()[:6]}"
    if keep:
        repo.set_config("trajectoriz.contributor", made)
    return made


# git's object ids, computed here ------------------------------------------------------------------
def blob_id(data: bytes) -> str:
    return packfile.object_id("blob", data)


def tree_body(entries: dict) -> bytes:
    """A tree of `entries` (name -> (mode, hex id)) as git writes it: entries sorted by name, a
    folder's name compared as if it ended with '/'."""
    def order(name: str) -> bytes:
        return name.encode() + (b"/" if entries[name][0] == "40000" else b"")

    return b"".join(f"{entries[n][0]} {n}\0".encode() + bytes.fromhex(entries[n][1])
                    for n in sorted(entries, key=order))


# what a push writes ---------------------------------------------------------------------------------
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


def blob_name(short_id: str) -> str:
    return f"{short_id}{SUFFIX}"


def manifest_bytes(contributor_name: str, packed: list) -> bytes:
    from atif.serialize import dumps

    return dumps({"format": MANIFEST_FORMAT, "contributor": contributor_name,
                  "sessions": [p.entry for p in sorted(packed, key=lambda p: p.entry["id"])]})


def trees(contributor_name: str, packed: list) -> tuple[list, str]:
    """The manifest and the trees of a push, as (kind, body, zlib level) for `packfile.stream`
    (the root tree last), and the root tree's id."""
    manifest = manifest_bytes(contributor_name, packed)
    written = [("blob", manifest, 1)]
    top = {MANIFEST: ("100644", blob_id(manifest))}
    if packed:  # (git keeps no empty folder)
        written.append(("tree", tree_body({blob_name(p.entry["id"]): ("100644", p.oid) for p in packed}), 1))
        top[SESSIONS] = ("40000", packfile.object_id("tree", written[-1][1]))
    written.append(("tree", tree_body(top), 1))
    return written, packfile.object_id("tree", written[-1][1])


# push ---------------------------------------------------------------------------------------------------
def run_push(args, env) -> int:
    repo = Repository.here(env)
    remote = chosen_remote(repo, args.remote, "push") if not args.dry_run else None
    me = contributor(repo, env, keep=not args.dry_run)
    state = cache.load(env, STATE_FILE)
    mine = state.setdefault(repo.key(), {"blobs": {}, "pushed": {}})
    ref = OWN_REFS + me
    if args.dry_run:  # (the remote's tip as the last pull or push saw it: nothing is fetched)
        tips = repo.tips()
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
    """(commit, its tree) the remote's ref of this contributor points to now, held in this
    repository as PULLED_REFS + me (fetched, that one ref, when this repository does not hold
    it yet); (None, None), and no such ref here, when the remote has none. A push starts from it: what it holds
    that this machine does not is kept (`_carried`), and the push updates the ref only while it
    is still this commit (`_leased_push`)."""
    ref, seen = OWN_REFS + me, PULLED_REFS + me
    try:
        listed = repo.git("ls-remote", remote, ref)
    except GitFailed as exc:
        raise UserError(f"cannot read {ref} at {remote}: {exc}") from None
    tips = [line.split(b"\t")[0].decode() for line in listed.splitlines() if line.endswith(b"\t" + ref.encode())]
    if not tips or not OID.fullmatch(tips[0].encode()):
        if seen in repo.tips():
            repo.git("update-ref", "-d", seen)
        return None, None
    if _missing(repo, [tips[0]]):
        try:
            repo.git("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, f"+{ref}:{seen}")
        except GitFailed as exc:
            raise UserError(f"cannot fetch {ref} from {remote}: {exc}") from None
    else:
        repo.git("update-ref", seen, tips[0])
    return repo.tips().get(seen, (None, None))


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
        moved = [line.split(b"\t")[0].decode() for line in repo.git("ls-remote", remote, ref).splitlines()
                 if line.endswith(b"\t" + ref.encode())] != ([tip] if tip else [])
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
            streamed: bool = False) -> tuple[list, int, "_Pack | None"]:
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
    lost = set(_missing(repo, [p.oid for _, p in found]))
    todo += [item for item, p in found if p.oid in lost]
    pack = _Pack(repo, len(todo) + 4) if streamed and todo else None  # + manifest, 2 trees, commit
    try:
        packed = [p for _, p in found if p.oid not in lost] + _rendered(todo, env, repo.root, count, pack)
        return packed, len(todo), pack
    except BaseException:
        if pack is not None:
            pack.abandon()
        raise


def _rendered(items: list, env, root: str, count: bool, into: "_Pack | None" = None) -> list:
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
            found.append(Packed(entry, blob_id(data), data, documents.cache_key(session), taken[0], redactions))
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
            if not pulled.marked(s) and not (forgotten and archive.key_of(s) in forgotten)], found


def _missing(repo: Repository, oids: list) -> list:
    """Those of the blobs that the repository does not hold (any more)."""
    if not oids:
        return []
    out = repo.git("cat-file", "--batch-check", stdin="".join(o + "\n" for o in oids).encode())
    return [line.split()[0].decode() for line in out.splitlines() if line.endswith(b" missing")]


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


class _Pack:
    """A pack stored by `git index-pack --stdin` as it is written (`packfile.Writer`): git
    checks every object as it reads it, on another core than the one making them."""

    INDEXING = ["index-pack", "--stdin"]

    def __init__(self, repo: Repository, count: int):
        import subprocess

        self.process = git_started(self.INDEXING, repo.root, repo.env, feeding=True, stdout=subprocess.DEVNULL)
        self._widen_pipe()
        self.writer = self._writing(lambda: packfile.Writer(self.process.stdin, count))

    def _widen_pipe(self) -> None:
        """A 1 MB pipe to git where the system allows (Linux; else its 64 KB): the blobs are
        read on while git catches up."""
        try:
            import fcntl

            fcntl.fcntl(self.process.stdin.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        except (ImportError, AttributeError, OSError):
            pass

    def add(self, kind: str, body: bytes, level: int = 0) -> None:
        """One more object (`level`: its zlib level, 0 for the zstd documents)."""
        if self.writer is not None:
            self._writing(lambda: self.writer.add(kind, body, level))

    def _writing(self, write):
        try:
            return write()
        except BrokenPipeError:  # git stopped reading: `stored` says why
            self.writer = None

    def stored(self) -> None:
        """Once every object is added: git's check done, the pack stored (GitFailed if not)."""
        git_finished(self.process, self.INDEXING)

    def abandon(self) -> None:
        self.process.kill()
        self.process.communicate()


def _write(repo: Repository, ref: str, me: str, packed: list, made: list, pack: _Pack | None = None) -> tuple[str, int]:
    """The new blobs, the trees `made` and a commit without parent of the root tree, stored as
    one pack (`pack`, when the blobs were added to it already), then `ref` set (rewritten) to
    the commit; (the commit, how many blobs and commits were written)."""
    import time

    if pack is None:
        new = {p.oid: p.data for p in packed if p.data is not None}
        pack = _Pack(repo, len(new) + len(made) + 1)
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


# reading what was fetched (untrusted) ------------------------------------------------------------------
def read_ref(repo: Repository, commit: str, objects: Objects, warnings: list, unwanted: set = frozenset()) -> list:
    """(manifest entry, blob id) of each session a ref's commit holds that passes every check,
    but those whose (agent, native id) is `unwanted`; what does not pass is left out, said in
    `warnings`."""
    listed = bounded_output(repo, ["ls-tree", "-r", "-z", "-l", "--full-tree", commit], MAX_LISTED)
    if listed is None:
        warnings.append("its tree is not one trajectoriz wrote (unreadable, or too big)")
        return []
    blobs = {}
    for record in listed.split(b"\0"):
        head, _, path = record.partition(b"\t")
        fields = head.split()
        if len(fields) == 4 and fields[1] == b"blob" and OID.fullmatch(fields[2]) and fields[3].isdigit():
            blobs[path.decode("utf-8", "replace")] = (fields[2].decode(), int(fields[3]))
    from atif.serialize import loads

    if MANIFEST not in blobs:
        warnings.append(f"its tree has no {MANIFEST}")
        return []
    try:
        manifest = loads(objects.read(blobs[MANIFEST][0], "blob", MAX_MANIFEST))
    except ValueError as exc:
        warnings.append(f"its {MANIFEST} cannot be read: {exc}")
        return []
    if not (isinstance(manifest, dict) and manifest.get("format") == MANIFEST_FORMAT
            and isinstance(manifest.get("sessions"), list)):
        warnings.append(f"its {MANIFEST} is not one trajectoriz wrote")
        return []
    found, skipped = [], 0
    for raw in manifest["sessions"]:
        named = (raw.get("agent"), raw.get("native_id")) if isinstance(raw, dict) else None
        if named and all(isinstance(part, str) for part in named) and named in unwanted:
            continue
        entry = checked_entry(raw)
        blob = blobs.get(f"{SESSIONS}/{blob_name(entry['id'])}") if entry else None
        if blob is None or blob[1] > pulled.MAX_BLOB:
            skipped += 1
            continue
        found.append((entry, blob[0]))
    if skipped:
        warnings.append(f"{skipped} of its {len(manifest['sessions'])} entries are not sessions trajectoriz wrote")
    return found


def checked_entry(raw) -> dict | None:
    """A manifest entry as discovery may keep and print it, None for one that is not what a
    push writes: an unknown agent, an id that is not that agent's, paths that leave the work
    tree, values of other types. First message and model are made listing text here."""
    from agents.base import one_line
    from discovery import catalog

    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not SHORT_ID.fullmatch(raw["id"]):
        return None
    agent, native_id, started = raw.get("agent"), raw.get("native_id"), raw.get("started")
    if not (isinstance(agent, str) and agent_of_prefix(raw["id"][:2]) == agent):
        return None
    if not (isinstance(native_id, str) and 0 < len(native_id) <= 1024 and "\0" not in native_id):
        return None
    if started is not None and not (type(started) in (int, float) and -1e11 < started < 1e11):
        return None
    cwd, root = raw.get("cwd"), raw.get("root")
    if cwd is not None and not (_relative_path(cwd)):
        return None
    if root is not None and not (isinstance(root, str) and root.startswith("/") and "\0" not in root
                                 and len(root) <= 4096):
        return None
    title, model, size = raw.get("title"), raw.get("model"), raw.get("bytes")
    return {"id": raw["id"], "agent": agent, "native_id": native_id, "started": started, "cwd": cwd,
            "root": root, "title": catalog.listing_title(one_line(title if isinstance(title, str) else "")),
            "model": catalog.listing_text(model[:200]) if isinstance(model, str) else None,
            "bytes": size if type(size) is int and size >= 0 else 0}


@functools.lru_cache(maxsize=None)
def agent_of_prefix(prefix: str) -> str | None:
    """`agents.named_by_prefix`, asked once per prefix (a manifest lists thousands of ids)."""
    import agents

    return agents.named_by_prefix(prefix)


def _relative_path(path) -> bool:
    """Whether a recorded path is one inside a work tree: relative, normalized, no `..`."""
    return (isinstance(path, str) and 0 < len(path) <= 4096 and "\0" not in path and not path.startswith("/")
            and os.path.normpath(path) == path and ".." not in path.split("/"))


# pull ---------------------------------------------------------------------------------------------------
def run_pull(args, env) -> int:
    repo = Repository.here(env)
    remote = chosen_remote(repo, args.remote, "pull")
    fetch = ["fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head", remote, f"+{OWN_REFS}*:{PULLED_REFS}*"]
    fetching = git_started(fetch, repo.root, repo.env)
    _prepare_checks()
    try:
        git_finished(fetching, fetch)
    except GitFailed as exc:
        raise UserError(f"cannot fetch the shared sessions from {remote}: {exc}") from None
    warnings: list = []
    listing, fresh, removed = update(repo, env, warnings)
    for warning in warnings:
        print(f"trajectoriz: warning: {warning}", file=sys.stderr)
    people = len({by for by, _, _ in listing["sessions"]})
    gone = f", {removed} removed: no longer on the remote" if removed else ""
    print(f"Pulled {len(listing['sessions'])} shared session(s) of {people} contributor(s) from "
          f"{remote} ({fresh} new or changed{gone}).", file=sys.stderr)
    return 0


def _prepare_checks() -> None:
    """Import what checking manifests needs, while git fetches (a tenth of a second, else after)."""
    import agents.base  # noqa: F401
    import atif.serialize  # noqa: F401
    import redaction.redact  # noqa: F401
    from discovery import catalog  # noqa: F401


def update(repo: Repository, env, warnings: list) -> tuple[dict, int, int]:
    """The listing of the pulled refs, made again when they changed: each ref's manifest read
    and checked (a ref whose commit did not change keeps what was read of it). The documents
    stay in git's objects, read and checked when something reads them (`pulled.document`).
    The listing, how many of its sessions are new or changed, and how many the last listing
    had that it has not."""
    old = pulled.load_listing(env, repo.key())
    refs = _pulled_refs(repo, warnings)
    if refs == old.get("refs"):
        return old, 0, 0
    kept_of = {}
    for by, oid, entry in old.get("sessions", []):
        kept_of.setdefault(by, []).append((entry, oid))
    known = {oid for _, oid, _ in old.get("sessions", [])}
    sessions, seen = [], set()
    with Objects(["-C", repo.root], repo.env) as objects:
        for by, commit in sorted(refs.items()):
            said: list = []
            entries = kept_of.get(by, []) if old.get("refs", {}).get(by) == commit else \
                read_ref(repo, commit, objects, said)
            for entry, oid in entries:
                if entry["id"] not in seen:
                    seen.add(entry["id"])
                    sessions.append([by, oid, entry])
            more = [f"... and {len(said) - WARNINGS_SHOWN} more"] if len(said) > WARNINGS_SHOWN else []
            warnings += [f"{PULLED_REFS}{by}: {w}" for w in said[:WARNINGS_SHOWN] + more]
    listing = {"format": pulled.LISTING_FORMAT, "root": repo.root, "refs": refs, "sessions": sessions}
    path = os.path.join(cache.cache_dir(env), pulled.listing_name(repo.key()))
    cache.write_private(path, cache.kept_bytes(listing))
    removed = {entry["id"] for _, _, entry in old.get("sessions", [])} - seen
    return listing, sum(1 for _, oid, _ in sessions if oid not in known), len(removed)


def _pulled_refs(repo: Repository, warnings: list) -> dict:
    """contributor -> commit of each pulled ref that names a contributor and is a commit."""
    out = bounded_output(repo, ["for-each-ref", "--format=%(objectname) %(objecttype) %(refname)",
                                PULLED_REFS], MAX_REFS * 400) or b""
    refs = {}
    for line in out.splitlines():
        oid, kind, name = (line.split(b" ", 2) + [b"", b""])[:3]
        by = name[len(PULLED_REFS):].decode("utf-8", "replace")
        if not CONTRIBUTOR.fullmatch(by) or by == "remote":
            warnings.append(f"{name.decode('utf-8', 'replace')[:200]!r}: not a contributor's name, skipped")
        elif kind != b"commit":
            warnings.append(f"{PULLED_REFS}{by}: a {kind.decode('utf-8', 'replace')[:20]}, not a commit, skipped")
        elif len(refs) >= MAX_REFS:
            warnings.append(f"more than {MAX_REFS} contributors: {PULLED_REFS}{by} and later skipped")
            break
        else:
            refs[by] = oid.decode()
    return refs


