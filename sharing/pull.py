"""`trajectoriz pull`: every contributor's ref fetched from the remote, each checked (`refs`),
and a listing of their sessions kept for discovery (`discovery.pulled`).

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
"""

from __future__ import annotations

import os
import sys

from core import cache
from core.errors import UserError
from discovery import pulled
from discovery.pulled import Objects
from sharing.git import GitFailed, Repository, bounded_output, git_finished, git_started
from sharing.refs import CONTRIBUTOR, OWN_REFS, PULLED_REFS, chosen_remote, read_ref

MAX_REFS = 1000                    # contributors read from one pull (every byte of a remote is untrusted)
WARNINGS_SHOWN = 10                # of one ref's: the rest are counted


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
