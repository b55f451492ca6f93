"""`trajectoriz forget`: sessions out of the archive and out of every cache, for good.

A forgotten session's archived versions that no other session needs are deleted, its key is
kept (a hash, nothing of its content) so that it is never archived again, and trajectoriz's
caches drop what they derived from it: rendered documents and their search texts (found by the
short id or native id they carry, whatever stamp they were kept under) and its facts; the
folders archived files were materialized in go too, and the snapshots of the catalog (all of
them: the next discovery makes a new one). The discovery index needs nothing done: the
discovery `forget` runs first keeps only the sources it finds, as they are now. The agents'
stores are never touched: a forgotten session that its agent still holds is read from there
again while it exists (its first message back in the index, its document in the cache).
"""

from __future__ import annotations

import os
import sys

from archiving import archiver
from core import cache
from core.errors import UserError
from core.timespec import when
from discovery import archive, catalog, snapshot
from rendering import doccache, documents

HEAD_BYTES = 4096  # a document names its session in its first lines


def run_forget(args, env) -> int:
    if not args.ids and not args.before:
        raise UserError("name the sessions to forget (ID ...) or --before DATE")
    chosen = chosen_sessions(args, env)
    with archiver.Writer(env) as writer:
        removed, sharing = writer.forget(list(dict.fromkeys(archive.key_of(s) for s in chosen)))
    purge_caches(env, chosen)
    still_live = sum(1 for s in chosen if catalog.origin(s).in_store)
    print(f"Forgot {len(chosen)} session(s): {removed} removed from the archive, and every cached "
          f"copy removed.", file=sys.stderr)
    if sharing:
        print(f"warning: {sharing} other archived session(s) keep a file these were recorded in too (a "
              f"store of many sessions, archived whole): what it holds of them stays in the archive "
              f"until those are forgotten as well (`trajectoriz forget` with their ids).", file=sys.stderr)
    if still_live:
        print(f"{still_live} of them are still in their agent's store: trajectoriz shows them from "
              f"there while they exist, and does not archive them again.", file=sys.stderr)
    return 0


def chosen_sessions(args, env) -> list:

    found = catalog.discover(env)
    chosen = [catalog.find(found, ident) for ident in args.ids]
    if args.before:
        cutoff = when(args.before, "--before")
        chosen += [s for s in found.sessions if s.started is not None and s.started < cutoff]
    unique = {id(s): s for s in chosen}
    return list(unique.values())


def purge_caches(env, sessions: list) -> None:
    _purge_documents(env, sessions)
    _purge_facts(env, sessions)
    snapshot.remove_all(env)
    archive.remove_abandoned_mirrors(archive.mirrors_folder(env), every=True)


def _purge_documents(env, sessions: list) -> None:
    """Every cached document of the sessions, and the search text beside it; search texts whose
    document is gone (evicted without them) too, as nothing says whose they are."""
    from core.jsonlib import orjson

    names = [b'"short_id": "' + s.short_id.encode() + b'"' for s in sessions]
    heads = [b'"session_id": ' + orjson.dumps(s.native_id) for s in sessions]
    directory = doccache.folder(env)
    listing = set(archiver.listdir(directory))
    for name in listing:
        stem, _, suffix = name.partition(".")
        if suffix == "json" and _names_one_of(os.path.join(directory, name), names, heads):
            for other in doccache.SUFFIXES:
                _unlink(os.path.join(directory, stem + other))
        elif "." + suffix in doccache.SUFFIXES[1:] and stem + ".json" not in listing:
            _unlink(os.path.join(directory, name))


def _names_one_of(path: str, names: list, heads: list) -> bool:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    head = data[:HEAD_BYTES]
    return any(name in data for name in names) or any(h in head for h in heads)


def _purge_facts(env, sessions: list) -> None:
    facts = cache.load(env, documents.FACTS_FILE)
    keys = {documents.cache_key(s) for s in sessions} & facts.keys()
    if keys:
        cache.save(env, documents.FACTS_FILE, {k: v for k, v in facts.items() if k not in keys})


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
