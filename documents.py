"""From a discovered session to the ATIF bytes every command serves.

`render()` is the single path: `show`, `export`, the mount and `search --content` all read these
exact bytes, so sizes and contents agree everywhere. A translator that fails never takes a
command down: the session becomes a valid document that says what went wrong.
"""

from __future__ import annotations

import agents
import cache
import catalog
from agents.base import Session
from atif import SCHEMA_VERSION
from atif.build import final_metrics
from atif.serialize import dumps
from version import VERSION

FACTS_FILE = "facts-v1.json"


def translate(session: Session, env) -> dict:
    """The ATIF document of a session, with trajectoriz's own fields in the root `extra`."""
    module = agents.load(session.agent)
    try:
        if "scan_error" in session.extra:
            raise RuntimeError(session.extra["scan_error"])
        doc = module.translate(session, env)
    except Exception as exc:  # any defect in a store or a translator: report, don't crash
        doc = failure_document(session, module, f"{type(exc).__name__}: {exc}")
    ours = {"short_id": session.short_id, "agent": session.agent, "source": session.source,
            "cwd": session.cwd, "title": session.title or None}
    extra = {k: v for k, v in ours.items() if v is not None}
    extra.update(doc.get("extra") or {})
    doc["extra"] = extra
    if "subagent_trajectories" in doc:  # keep the spec's key order: extra before subagents
        doc["subagent_trajectories"] = doc.pop("subagent_trajectories")
    return doc


def failure_document(session: Session, module, reason: str) -> dict:
    steps = [{"step_id": 1, "source": "system",
              "message": f"trajectoriz could not translate this session: {reason}"}]
    return {"schema_version": SCHEMA_VERSION, "session_id": session.native_id,
            "agent": {"name": getattr(module, "ATIF_NAME", session.agent), "version": "unknown"},
            "steps": steps, "final_metrics": final_metrics(steps),
            "extra": {"error": reason, "warnings": [f"translation failed: {reason}"]}}


def render(session: Session, env) -> bytes:
    return dumps(translate(session, env))


def cache_key(session: Session) -> str:
    return f"{session.agent}|{session.source}|{session.locator}"


def cache_stamp(session: Session, env) -> list:
    """What a cached rendering is valid for: the native files' fingerprint, the translator
    and trajectoriz versions."""
    module = agents.load(session.agent)
    fp = cache.fingerprint(catalog.dependencies(module, session.source, env))
    return [fp, catalog.module_version(module), VERSION]


class Facts:
    """Size and step count of each rendered document, kept across runs so that `list` and the
    mount's `ls -l` need not translate again what did not change.

    Records are written in batches by `save()`, merged into what is on disk (another command
    may have added entries meanwhile). The mount records from its serving thread and saves from
    another; a record made at the very instant of a save may be lost, which only costs one
    translation later."""

    def __init__(self, env):
        self.env = env
        self.entries: dict = cache.load(env, FACTS_FILE)
        self._unsaved: dict = {}

    def get(self, session: Session, stamp: list) -> dict | None:
        found = self.entries.get(cache_key(session))
        return found if found and found.get("stamp") == stamp else None

    def record(self, session: Session, stamp: list, data: bytes, doc: dict) -> dict:
        facts = {"stamp": stamp, "size": len(data), "steps": len(doc["steps"])}
        self.entries[cache_key(session)] = facts
        self._unsaved[cache_key(session)] = facts
        return facts

    def rendered(self, session: Session) -> tuple[list, bytes]:
        """The session's bytes, rendered now, with the stamp they are valid for; their facts are
        recorded on the way. The stamp is taken before translating, so a session that changes
        meanwhile is re-done next time."""
        stamp = cache_stamp(session, self.env)
        doc = translate(session, self.env)
        data = dumps(doc)
        self.record(session, stamp, data, doc)
        return stamp, data

    def of(self, session: Session) -> dict:
        """The facts of a session's document, translating it only when the cache misses."""
        stamp = cache_stamp(session, self.env)
        found = self.get(session, stamp)
        if found is None:
            doc = translate(session, self.env)
            found = self.record(session, stamp, dumps(doc), doc)
        return found

    def save(self) -> None:
        unsaved, self._unsaved = self._unsaved, {}
        if unsaved:
            stored = cache.load(self.env, FACTS_FILE)
            stored.update(unsaved)
            cache.save(self.env, FACTS_FILE, stored)
