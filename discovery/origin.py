"""Where a session's bytes live: its origin, one small interface with one module per place.

A session comes from one of three places, and each is one module implementing this interface:
- `store`: the agent's own store, read in place (`store.Store`);
- `archive`: trajectoriz's archive, after the agent deleted it (`archive.Archived`);
- `pulled`: a teammate's ref in the project's repository, after `pull` (`pulled.Pulled`).
The catalog chooses a session's origin when it lists it, from the mark the archive or a pull
left in its `extra` (none: the store), which its cached record keeps, so a session restored
from a cache or a snapshot has the same origin (`catalog.origin`). rendering/, the mount,
export, search and push ask the origin and never test which one it is.

An origin is bound to its session and answers:

    kind: str                  "store", "archive" or "shared" (what listings and `agents` say)
    contributor: str | None    who shared it (a pulled session), else None
    in_store: bool             whether its bytes are its agent's own files, read in place: the
                               agent may still change or delete them (the archive keeps them,
                               the mount watches them); False for the archive's and a pull's
    finished: bool             whether its document comes finished, trajectoriz's own fields in
                               it (as pushed), rather than translated here
    stamp(env, redact=True, known=None) -> list
        What decides whether a cached rendering is still good (the document cache, the mount's
        byte cache, the facts): [fingerprint, version, trajectoriz's version, redact]; its
        fingerprint ([size, mtime_ns] of each file it is read from, or what stands for them)
        gives the mount its file's time. `known`: what discovery has just checked of the
        session (`Catalog.known`), which spares stat'ing its files again.
    stamps(env, known=None, stats=None) -> (stamp, valid)
        `stamp(env, True, known)`, and what its cached document is valid for: that stamp and
        the ctimes of the files it is read from (a chmod that makes them unreadable changes
        no mtime), or [] when it reads none in place.
    same_facts(stamp) -> list | None
        The stamp of another rendering of the same bytes, whose kept facts hold for this one
        (an archived session's rendering from its store while its files were as archived),
        else None.
    document(env) -> dict
        Its ATIF document: translated from its native bytes, or as pushed; when it cannot be
        read, the failure document that says why (never raises for bad bytes).
    now(env) -> Session | None
        The session to read now: itself; for one whose agent deleted its file since it was
        listed, its archived copy (None when the archive holds none: it is gone).

`Origin` below answers what most share; an origin whose bytes its agent's module translates
gives only `translated(module, env)` for `document` (the failure document comes with it).
A fourth origin (a personal remote, a server) is one more module with a class answering these,
and one more mark in `catalog.origin`. The mount's open path is one descent: the mount asks
rendering/ for the bytes, rendering asks the session's origin, the origin reads through core/.
"""

from __future__ import annotations

import agents


def module_version(module) -> str:
    """The version of an agent's translator (its module's VERSION), part of a stamp."""
    return str(getattr(module, "VERSION", 1))


class Origin:
    """What every origin shares: its session; a document translated by the session's agent
    module (`translated`, each origin's own), the failure document when that fails."""

    __slots__ = ("session",)
    kind = ""
    contributor = None
    in_store = False
    finished = False

    def __init__(self, session):
        self.session = session

    def stamps(self, env, known: tuple | None = None, stats: dict | None = None) -> tuple[list, list]:
        stamp = self.stamp(env, True, known)
        return stamp, stamp + [[]]

    def same_facts(self, stamp: list) -> list | None:
        return None

    def now(self, env):
        return self.session

    def document(self, env) -> dict:
        """Its translator's document, or the failure document of any defect in its bytes or
        the translator."""
        module = agents.load(self.session.agent)
        try:
            if "scan_error" in self.session.extra:
                raise RuntimeError(self.session.extra["scan_error"])
            return self.translated(module, env)
        except Exception as exc:  # any defect in a store or a translator: report, don't crash
            return self.failure_document(module, f"{type(exc).__name__}: {exc}")

    def translated(self, module, env) -> dict:
        raise NotImplementedError

    def failure_document(self, module, reason: str) -> dict:
        """A valid document that says why the session could not be read."""
        from atif import SCHEMA_VERSION  # here: listings import the origins, seldom fail to read
        from atif.build import final_metrics

        session = self.session
        steps = [{"step_id": 1, "source": "system",
                  "message": f"trajectoriz could not translate this session: {reason}"}]
        return {"schema_version": SCHEMA_VERSION, "session_id": session.native_id,
                "agent": {"name": getattr(module, "ATIF_NAME", session.agent), "version": "unknown"},
                "steps": steps, "final_metrics": final_metrics(steps),
                "extra": {"error": reason, "warnings": [f"translation failed: {reason}"]}}
