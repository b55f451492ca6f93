"""A contributor's ref: which remote and whose name, what its tree holds (MANIFEST_FORMAT, the
names of its blobs), and the checks every ref read from a remote passes (`read_ref`): a push
reads its own ref's (what it carries over), a pull everyone's.

    manifest.json                      what a listing needs of every session (MANIFEST_FORMAT)
    sessions/<short id>.atif.json.zst  one document per session
"""

from __future__ import annotations

import functools
import os
import re

from core.errors import UserError
from discovery import pulled
from discovery.pulled import Objects
from sharing import packfile
from sharing.git import Repository, bounded_output

OWN_REFS = "refs/trajectoriz/"
PULLED_REFS = "refs/trajectoriz/remote/"
MANIFEST = "manifest.json"
SESSIONS = "sessions"
SUFFIX = ".atif.json.zst"
MANIFEST_FORMAT = "trajectoriz-shared-1"

# Bounds on what is read of a remote (every byte of it is untrusted).
MAX_LISTED = 16 * 1024 * 1024      # bytes of `git ls-tree` output read for one ref
MAX_MANIFEST = 64 * 1024 * 1024    # bytes of one manifest

NOBODY = "someone-e3b0c4"          # what older versions made of no git identity at all
CONTRIBUTOR = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
SHORT_ID = re.compile(r"[a-z]{2}-[0-9a-f]{8,64}")
OID = re.compile(rb"[0-9a-f]{40}")


# remotes and contributors ------------------------------------------------------------------------
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



# what a ref's tree holds -------------------------------------------------------------------------
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
    top = {MANIFEST: ("100644", packfile.blob_id(manifest))}
    if packed:  # (git keeps no empty folder)
        written.append(("tree", packfile.tree_body({blob_name(p.entry["id"]): ("100644", p.oid) for p in packed}), 1))
        top[SESSIONS] = ("40000", packfile.object_id("tree", written[-1][1]))
    written.append(("tree", packfile.tree_body(top), 1))
    return written, packfile.object_id("tree", written[-1][1])



# reading a ref (untrusted) -----------------------------------------------------------------------
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
