"""`trajectoriz agents`: the health of every agent store this machine holds.

For each known agent: the store paths found, how many sessions and how many bytes of native
data they hold (and how many of its sessions are served from the archive only, their native
record gone, and how many were pulled from the project's remote: their documents are checked
here as everywhere, when read), how many sessions translate with warnings and how many fail (grouped by kind of
problem, with the first reason of each kind), and which native formats and agent versions were
seen. Every session is translated, through `documents.translate`, the path every command uses,
so a problem shows here exactly as it would in `show` or the mount. Sessions are translated on
every core (`parallel.ordered`) when there are enough to pay for a pool, with progress on a
terminal.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter


import agents
from archiving import retention
from core import parallel
from core.output import cell, human_bytes, table
from discovery import catalog
from rendering import documents

POOL_THRESHOLD = 16      # fewer sessions are translated in this process: a pool costs more
MAX_KINDS = 8            # problem kinds shown per agent; the rest are counted in "more"


# one session ---------------------------------------------------------------------------------------
def summarize(session, env) -> dict:
    """What the report needs from one session's document (small, to cross process bounds)."""
    doc = documents.translate(session, env)  # redacted: its warnings are printed
    extra = doc.get("extra") or {}
    origin = catalog.origin(session)
    return {"error": extra.get("error"), "warnings": warnings_of(doc),
            "version": (doc.get("agent") or {}).get("version") or "unknown",
            "format": session.extra.get("format") or "unknown", "id": session.short_id,
            "archived": origin.kind == "archive", "shared": origin.kind == "shared"}


def warnings_of(doc: dict) -> list[str]:
    """The document's warnings and those of the sub-agents embedded in it, at any depth (a
    sub-agent's spilled output that could not be read is the session's problem too), each of
    these named by its trajectory."""
    found = list((doc.get("extra") or {}).get("warnings") or [])
    pending = [(sub, "") for sub in doc.get("subagent_trajectories") or []]
    while pending:
        sub, within = pending.pop(0)
        if not isinstance(sub, dict):
            continue
        name = f"{within}sub-agent {sub.get('trajectory_id') or sub.get('session_id')}"
        found += [f"{name}: {w}" for w in (sub.get("extra") or {}).get("warnings") or []]
        pending += [(nested, name + " > ") for nested in sub.get("subagent_trajectories") or []]
    return found


def summarize_all(sessions: list, env) -> list[dict]:
    """`summarize` of every session, in order: on every core when there are enough of them."""
    workers = parallel.cores() if len(sessions) >= POOL_THRESHOLD else 1
    progress = parallel.Progress(len(sessions), "translating")
    found = []
    try:
        for summary in parallel.ordered(summarize, sessions, (dict(env),), workers):
            found.append(summary)
            progress.step()
    finally:
        progress.clear()
    return found


# one agent -----------------------------------------------------------------------------------------
def problem_kind(reason: str) -> str:
    """A problem's kind: its text up to the first detail (after a colon that does not follow a
    file name), numbers and quoted values blanked, so that "3 malformed line(s)…, first at line
    7: Expecting value" and "1 malformed line(s)…, first at line 2: …" are one kind."""
    text = re.sub(r"\d+", "N", re.sub(r"'[^']*'|\"[^\"]*\"", "…", reason))
    parts = text.split(": ")
    kept = 0
    while kept < len(parts) - 1 and re.fullmatch(r"[\w.-]+\.\w+", parts[kept]):
        kept += 1  # a leading file name ("wire.jsonl: …") belongs to the kind
    return ": ".join(parts[: kept + 1]).strip()[:120]


def group_problems(items: list[tuple[str, str]]) -> list[dict]:
    """(session id, reason) pairs grouped by kind: count of sessions and the first reason."""
    groups: dict = {}
    for session_id, reason in items:
        group = groups.setdefault(problem_kind(reason), {"kind": problem_kind(reason), "sessions": set(),
                                                         "first": reason, "first_session": session_id})
        group["sessions"].add(session_id)
    ordered = sorted(groups.values(), key=lambda g: -len(g["sessions"]))
    return [{**g, "sessions": len(g["sessions"])} for g in ordered]


def native_bytes(module, sources: list, env) -> int:
    files = {path for source in sources for path in catalog.dependencies(module, source, env)}
    total = 0
    for path in files:
        try:
            total += os.path.getsize(path)
        except OSError:
            pass
    return total


def agent_report(name: str, found: catalog.Catalog, summaries: list[dict], env) -> dict:
    module = agents.load(name)
    sources = found.sources.get(name, [])
    failed = [s for s in summaries if s["error"]]
    warned = [s for s in summaries if not s["error"] and s["warnings"]]
    return {
        "agent": name, "atif_name": getattr(module, "ATIF_NAME", name),
        "store": catalog.listing_text(os.path.commonpath(sources)) if sources else None,
        "sources": len(sources), "sessions": len(summaries),
        "archived_only": sum(1 for s in summaries if s["archived"]),
        "shared": sum(1 for s in summaries if s["shared"]),
        "native_bytes": native_bytes(module, sources, env),
        "sessions_with_warnings": len(warned), "sessions_failed": len(failed),
        "sessions_without_cwd": sum(1 for s in found.by_agent(name) if not s.cwd),
        "warnings": group_problems([(s["id"], w) for s in warned for w in s["warnings"]])[:MAX_KINDS],
        "failures": group_problems([(s["id"], s["error"]) for s in failed])[:MAX_KINDS],
        "store_problems": [catalog.listing_text(f"{p.source or '(store)'}: {p.reason}")
                           for p in found.problems if p.agent == name],
        "formats": dict(Counter(s["format"] for s in summaries).most_common()),
        "versions": dict(Counter(s["version"] for s in summaries).most_common()),
        "source_paths": [catalog.listing_text(source) for source in sources],
    }


def report(env) -> list[dict]:
    found = catalog.discovered(env)
    stores = list(found.sessions)
    catalog.with_pulled(env, found, None)  # and those pulled into the repository here: read when read
    summaries = summarize_all(found.sessions, env)
    by_agent: dict = {name: [] for name in agents.names()}
    for session, summary in zip(found.sessions, summaries):
        by_agent[session.agent].append(summary)
    policies = retention.policies(stores, env)  # pulled sessions are no store's
    return [{**agent_report(name, found, by_agent[name], env), "retention": policies[name]}
            for name in agents.names()]


# output -------------------------------------------------------------------------------------------
def _counts(mapping: dict) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in mapping.items()) or "—"


def short_path(path: str, env, limit: int = 60) -> str:
    """A path for a table cell: the home directory as `~`, long paths cut from the left."""
    home = os.path.expanduser("~") if not env.get("HOME") else env["HOME"]
    if home and (path == home or path.startswith(home.rstrip(os.sep) + os.sep)):
        path = "~" + path[len(home.rstrip(os.sep)):]
    return path if len(path) <= limit else "…" + path[-(limit - 1):]


def markdown(rows: list[dict], env) -> str:
    headers = ["Agent", "Store", "Sessions", "Native data", "With warnings", "Failed", "Formats",
               "Versions", "Retention"]
    body = table(headers, [_table_row(r, env) for r in rows])
    lines = [f"## Agent stores — {heading(rows)}", "", body]
    details = [line for r in rows for line in _problem_lines(r)]
    if details:
        lines += ["", "### Problems (first reason of each kind)", "", *details]
    return "\n".join(lines) + "\n"


def heading(rows: list[dict]) -> str:
    """How many agents' stores this machine holds, and of how many agents sessions are listed
    without one (from the archive, or shared by teammates and pulled)."""
    found = sum(1 for r in rows if r["sources"])
    text = f"{found} of {len(rows)} agents' stores found on this machine"
    shared = sum(1 for r in rows if not r["sources"] and r["shared"])
    archived = sum(1 for r in rows if not r["sources"] and not r["shared"] and r["archived_only"])
    if shared:
        text += f"; sessions of {shared} more agent(s) shared by teammates (`pull`)"
    if archived:
        text += f"; sessions of {archived} more agent(s) from the archive only"
    return text


def _table_row(row: dict, env) -> list[str]:
    store = f"`{cell(short_path(row['store'], env))}`" if row["store"] else "not found"
    notes = [f"{row[k]} {label}" for k, label in (("archived_only", "archived"), ("shared", "shared")) if row[k]]
    sessions = str(row["sessions"]) + (f" ({', '.join(notes)})" if notes else "")
    return [row["agent"], store, sessions, human_bytes(row["native_bytes"]),
            str(row["sessions_with_warnings"]), str(row["sessions_failed"]),
            cell(_counts(row["formats"]), 40), cell(_counts(row["versions"]), 40), cell(row["retention"], 100)]


def _problem_lines(row: dict) -> list[str]:
    lines = [f"- **{row['agent']}**: {cell(p, 200)}" for p in row["store_problems"]]
    if row["sessions_without_cwd"]:
        lines.append(f"- **{row['agent']}**: {row['sessions_without_cwd']} session(s) recorded no working "
                     f"directory, so they are in no project (`list --all` shows them)")
    for label, groups in (("failed", row["failures"]), ("warning", row["warnings"])):
        for group in groups:
            lines.append(f"- **{row['agent']}** {label} in {group['sessions']} session(s), first "
                         f"`{group['first_session']}`: {cell(group['first'], 200)}")
    return lines


def run(args, env) -> int:
    from core.jsonlib import orjson

    rows = report(env)
    out = sys.stdout.buffer
    if args.json:
        out.write(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    else:
        out.write(markdown(rows, env).encode())
    out.flush()
    return 0
