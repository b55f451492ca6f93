"""From a discovered session to the ATIF bytes every command serves.

`document()` is the single path: `show`, `export`, the mount and `search --content` all read
these exact bytes (or their parsed form), so sizes and contents agree everywhere, and secrets
are redacted in all of them. A translator that fails never takes a command down: the session
becomes a valid document that says what went wrong.
"""

from __future__ import annotations

import time

from agents.base import Session
from atif.serialize import dumps, loads
from core import cache
from discovery import catalog
from rendering import toolkinds

SHORT_HASH = 7  # of a commit, in INDEX.md
FACTS_FILE = cache.named("facts-v6", python=True, ext=".bin")  # marshal (cache._decode): keys are paths, which need not be UTF-8


def document(session: Session, env, redact: bool = True, stamp: list | None = None) -> tuple[dict, bytes]:
    """The ATIF document of a session and its bytes, secrets redacted unless told otherwise
    (their count per kind then sits in `extra.redactions`). `stamp`: the session's
    `stamps()[1]` when the caller has it already."""
    data, doc = _cached_or_rendered(session, env, redact, stamp)
    return (doc if doc is not None else loads(data)), data


def render(session: Session, env, redact: bool = True, stamp: list | None = None) -> bytes:
    """The document's bytes (`document` without parsing them); `stamp` as there."""
    return _cached_or_rendered(session, env, redact, stamp)[0]


def _cached_or_rendered(session: Session, env, redact: bool,
                        stamp: list | None = None) -> tuple[bytes, dict | None]:
    """The document's bytes from the document cache (`doccache`, redacted renderings only),
    without parsing them; else rendered now, with the document, and stored. The stamp is taken
    before translating, so a session that changes meanwhile is re-done next time."""
    from rendering import doccache  # here: listings read facts, never documents

    if not redact:
        stamp = None
    elif stamp is None:
        stamp = stamps(session, env)[1]
    if stamp is not None:
        found = doccache.get(env, cache_key(session), session.short_id, stamp)
        if found is not None:
            return found, None
    doc, data = _rendered(session, env, redact)
    if stamp is not None and "error" not in doc["extra"]:  # a failure may be passing: not kept
        doccache.put(env, cache_key(session), session.short_id, stamp, data)
    return data, doc


def stamps(session: Session, env, known: tuple | None = None, stats: dict | None = None) -> tuple[list, list]:
    """From one stat of each native file: the stamp of the redacted rendering's facts
    (`cache_stamp`), and what its cached document is valid for: that stamp and the native
    files' ctimes, so that a session made unreadable (chmod changes no content, no mtime) is
    read again, and says so, rather than served from the cache. `known` and `stats`: what
    discovery has just found (`Catalog.known`, `Catalog.stats`), which spares loading the
    translator and stat'ing its files again. The session's origin answers (discovery/origin.py)."""
    return catalog.origin(session).stamps(env, known, stats)


def _rendered(session: Session, env, redact: bool) -> tuple[dict, bytes]:
    """Translated, cleaned (secrets out unless told otherwise, valid Unicode always), then
    serialized once."""
    from redaction.redact import clean_tree  # here: what reads cached documents never needs the rules

    translated = _translated(session, env)
    with catalog.markers_of(session):
        doc, counts = clean_tree(translated, redact)
    if counts:
        doc["extra"] = {**doc["extra"], "redactions": counts}
    return doc, dumps(doc)


def translate(session: Session, env, redact: bool = True) -> dict:
    return document(session, env, redact)[0]


def _translated(session: Session, env) -> dict:
    """The ATIF document of a session as its origin gives it (discovery/origin.py: translated
    from its native bytes, or the failure document), with trajectoriz's own fields in the root
    `extra`; a document that comes finished (as pushed) as it came."""
    origin = catalog.origin(session)
    doc = origin.document(env)
    if origin.finished:
        return doc
    toolkinds.annotate(doc, session.agent, session.cwd)
    ours = {"short_id": session.short_id, "agent": session.agent, "source": session.source,
            "cwd": session.cwd, "title": catalog.first_message(session) or None}
    extra = {k: v for k, v in ours.items() if v is not None}
    extra.update(doc.get("extra") or {})
    found_first = session.extra.get("discovery_warnings") or []
    if found_first:
        extra["warnings"] = [*found_first, *(extra.get("warnings") or [])]
    doc["extra"] = extra
    if "subagent_trajectories" in doc:  # keep the spec's key order: extra before subagents
        doc["subagent_trajectories"] = doc.pop("subagent_trajectories")
    return doc


def cache_key(session: Session) -> str:
    return f"{session.agent}|{session.source}|{session.locator}"


def cache_stamp(session: Session, env, redact: bool = True, known: tuple | None = None) -> list:
    """What a cached rendering is valid for: the native files' fingerprint, the translator
    and trajectoriz versions, and whether secrets were redacted. `known`: the session's native
    files, its translator's version and the files' fingerprint as discovery has just checked
    it (`Catalog.known`), which spares loading the translator and stat'ing them again. The
    session's origin answers (discovery/origin.py)."""
    return catalog.origin(session).stamp(env, redact, known)


def totals(doc: dict, data: bytes, stamp: list, card: dict | None = None) -> dict:
    """What `list`, `stats` and the mount need to know of a document without translating it
    again: its size and steps, the totals `stats` adds up (tokens and cost from
    `final_metrics`, tool calls counted with the sub-agents', like the tokens), and the files its
    tool calls wrote (`blame`, INDEX.md; not those a refused or failed call only attempted), the
    branches it ran on and its first and last step times (`span`: a card's related sessions).
    `card`: the document's `cards.facts`, when the caller has them."""
    from rendering import cards

    fm = doc.get("final_metrics") or {}
    card = card if card is not None else cards.facts(doc)
    return {"stamp": stamp, "size": len(data), "steps": len(doc["steps"]),
            "tool_calls": tool_calls(doc), "prompt": fm.get("total_prompt_tokens"),
            "completion": fm.get("total_completion_tokens"), "cached": fm.get("total_cached_tokens"),
            "cost": fm.get("total_cost_usd"),
            "files": sorted({path for write in toolkinds.writes(doc) for path in write["paths"]}),
            "title": card["title"], "outcome": card["outcome"],
            "commits": [commit["hash"][:SHORT_HASH] for commit in card["commits"]],
            "branches": card["branches"], "span": card["span"],
            "requests": cards.request_text(card),
            "card_size": len(cards.render(doc, card))}


def tool_calls(doc: dict) -> int:
    own = sum(len(step.get("tool_calls") or ()) for step in doc.get("steps") or ())
    return own + sum(tool_calls(sub) for sub in doc.get("subagent_trajectories") or ())


def fresh_totals(session: Session, env, redact: bool = True) -> dict:
    """Translate a session and return its totals (a pool worker's job). The stamp is taken
    before translating, so a session that changes meanwhile is re-done next time."""
    stamp = cache_stamp(session, env, redact)
    doc, data = document(session, env, redact)
    return totals(doc, data, stamp)


class Facts:
    """The `totals` of each rendered document, kept across runs so that `list`, `stats` and the
    mount's `ls -l` need not translate again what did not change.

    Records are written in batches by `save()`, merged into what is on disk (another command
    may have added entries meanwhile). The mount records from its serving thread and its warm-up
    threads (mount/warmup.py), and saves from another; a record made at the very instant of a save may be lost, which only costs one
    translation later."""

    def __init__(self, env, redact: bool = True):
        self.env = env
        self.redact = redact
        self.entries: dict = cache.load(env, FACTS_FILE)
        self._unsaved: dict = {}
        self.generation = 0  # how many records were made: what was derived from fewer is older

    def has(self, session: Session) -> bool:
        """Whether some rendering of the session has facts here (of its current version or not)."""
        return cache_key(session) in self.entries

    def get(self, session: Session, stamp: list) -> dict | None:
        """The facts recorded for `stamp`; for a session served from the archive, also those
        of its rendering from the store while its native files were as archived (the same
        bytes: its origin names its rendering apart only in the document cache, `same_facts`),
        so that its steps stay known once its agent deleted it."""
        found = self.entries.get(cache_key(session))
        if not found or not isinstance(found, dict):
            return None
        if found.get("stamp") == stamp or ((same := catalog.origin(session).same_facts(stamp)) is not None
                                           and found.get("stamp") == same):
            return found
        return None

    def latest(self, session: Session) -> dict | None:
        """The facts of the session's latest redacted rendering, of its current version or
        not: a session only grows, and what its user asked stays asked (what a search of the
        requests and titles prints is always redacted)."""
        found = self.entries.get(cache_key(session))
        stamp = found.get("stamp") if isinstance(found, dict) else None
        return found if isinstance(stamp, list) and stamp and stamp[-1] is True else None

    def put(self, session: Session, facts: dict) -> dict:
        self.entries[cache_key(session)] = facts
        self._unsaved[cache_key(session)] = facts
        self.generation += 1
        return facts

    def record(self, session: Session, stamp: list, data: bytes, doc: dict) -> dict:
        return self.put(session, totals(doc, data, stamp))

    def rendered(self, session: Session, taken: tuple | None = None) -> tuple[list, bytes]:
        """The session's bytes, rendered now, with the stamp they are valid for; their facts are
        recorded on the way. The stamp is taken before translating, so a session that changes
        meanwhile is re-done next time. `taken`: `stamps(session)` as the caller has just taken
        them (redacted renderings), which spares stat'ing the native files again."""
        if taken is None:
            stamp, valid = cache_stamp(session, self.env, self.redact), None
        else:
            stamp, valid = taken
        data, doc = _cached_or_rendered(session, self.env, self.redact, valid)
        if doc is not None or self.get(session, stamp) is None:
            self.record(session, stamp, data, doc if doc is not None else loads(data))
        return stamp, data

    def of(self, session: Session) -> dict:
        """The facts of a session's document, translating it only when the cache misses."""
        found = self.get(session, cache_stamp(session, self.env, self.redact))
        if found is None:
            found = self.put(session, fresh_totals(session, self.env, self.redact))
        return found

    def of_all(self, sessions: list[Session]) -> list[dict]:
        """The facts of many sessions, the misses translated on every core."""
        from core import parallel

        found = [self.get(s, cache_stamp(s, self.env, self.redact)) for s in sessions]
        missing = [i for i, facts in enumerate(found) if facts is None]
        progress = parallel.Progress(len(missing), "translating")
        try:
            work = parallel.ordered(fresh_totals, [sessions[i] for i in missing], (self.env, self.redact))
            for n, facts in enumerate(work):
                found[missing[n]] = self.put(sessions[missing[n]], facts)
                progress.step()
        finally:
            progress.clear()
        return found

    def fill(self, sessions: list[Session], seconds: float) -> list[Session]:
        """Render, on every core, the sessions that no redacted rendering has facts of (in the
        order given: newest first), for at most about `seconds` (the result of the pool's chunk in
        hand is waited for), and keep their facts; the sessions left without any."""
        from core import parallel

        missing = [s for s in sessions if self.latest(s) is None]
        if not missing:
            return []
        deadline = time.monotonic() + seconds
        progress = parallel.Progress(len(missing), "reading sessions")
        done = 0
        try:
            for facts in parallel.ordered(fresh_totals, missing, (self.env, self.redact)):
                self.put(missing[done], facts)
                done += 1
                progress.step()
                if time.monotonic() >= deadline:
                    break
        finally:
            progress.clear()
            self.save()
        return missing[done:]

    def save(self) -> None:
        unsaved, self._unsaved = self._unsaved, {}
        if unsaved:
            stored = cache.load(self.env, FACTS_FILE)
            stored.update(unsaved)
            cache.save(self.env, FACTS_FILE, stored)
