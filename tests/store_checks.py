"""What every agent test checks, written once: translate a store, count what a document holds,
prove the store was not touched, compare golden files, and scope sessions to a project.

The native side of each count is computed by the agent's own test, straight from its records;
this module only counts the document side."""

from __future__ import annotations

import hashlib
import os

import catalog
from atif.serialize import dumps, loads
from helpers import ROOT, assert_valid

GOLDEN = os.path.join(ROOT, "tests", "golden")


def translate_all(module, env) -> list:
    """(session, document) for every session the module discovers, each document validated."""
    found = []
    for source in module.sources(env):
        for session in module.scan(source, env):
            doc = module.translate(session, env)
            assert_valid(doc)
            found.append((session, doc))
    return found


def doc_counts(doc: dict) -> dict:
    """User steps, tool calls and joined tool results of a document's own steps."""
    steps = doc["steps"]
    results = [r for s in steps for r in (s.get("observation") or {}).get("results", [])
               if r.get("source_call_id")]
    return {"user": sum(1 for s in steps if s["source"] == "user"),
            "calls": sum(len(s.get("tool_calls") or []) for s in steps),
            "results": len(results)}


def totals(doc: dict) -> tuple:
    final = doc.get("final_metrics") or {}
    return (final.get("total_prompt_tokens"), final.get("total_completion_tokens"),
            final.get("total_cached_tokens"))


def tree_state(*roots: str) -> dict:
    """Content hash, size and mtime of every file under `roots` (side files included): equal
    before and after a test means nothing was written, created or removed."""
    state = {}
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                st = os.stat(path)
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                state[path] = (digest, st.st_size, st.st_mtime_ns)
    return state


def check_golden(agent: str, name: str, doc: dict) -> None:
    """Compare with `tests/golden/<agent>/<name>.atif.json`; `UPDATE_GOLDEN=1` rewrites it
    (then read the new file through by hand before committing)."""
    path = os.path.join(GOLDEN, agent, f"{name}.atif.json")
    data = dumps(doc)
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    with open(path, "rb") as handle:
        assert loads(handle.read()) == loads(data), f"{path} differs (UPDATE_GOLDEN=1 to rewrite)"


def scoped_ids(env, project: str, agent: str) -> set:
    """Native ids of the agent's sessions that belong to `project`, as `list --dir` sees them."""
    found = catalog.discover(env, names=[agent], use_cache=False)
    return {s.native_id for s in catalog.Scope(project).filter(found.sessions)}
