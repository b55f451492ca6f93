"""INDEX.md beside the session files (in the mount and in an export): one line per session,
newest first, for an agent to pick the one file to open: its file name, date, agent, model, first
request, and, when its document was rendered before and the session did not change since, its
steps, tool calls and the files it changed (from the document facts: nothing is rendered for
it, so its cost is a listing's; a field not known yet is blank)."""

from __future__ import annotations

import os

from core.output import cell, table
from discovery import catalog, pulled
from rendering import documents

INDEX = "INDEX.md"
REQUEST_CHARS = 100
FILES_SHOWN = 5
HEADERS = ["File", "Date", "Agent", "Model", "Steps", "Tool calls", "First request", "Files changed"]


def index(project: str | None, sessions: list, facts: documents.Facts, env, known=None) -> bytes:
    """The index of `sessions` (in their order: discovery's, newest first). `known(session)`:
    what discovery has checked of it (`Catalog.known`, or None), which spares stat'ing its files."""
    known = known or (lambda s: None)
    rows = [row(s, facts.get(s, documents.cache_stamp(s, env, facts.redact, known(s)))) for s in sessions]
    headers = HEADERS
    if any(pulled.marked(s) for s in sessions):  # who shared each pulled session (pulled.py)
        headers = HEADERS + ["Shared by"]
        rows = [r + [pulled.contributor_of(s) or ""] for r, s in zip(rows, sessions)]
    return (f"# Index of the sessions of {cell(project or 'every project')}\n\n"
            f"{len(rows)} session(s), newest first: one line each. Steps, tool calls and files changed "
            f"are blank for a session not rendered since it last changed (open its file once, or run "
            f"`trajectoriz list --steps`).\n\n{table(headers, rows)}\n").encode()


def row(session, known: dict | None) -> list[str]:
    counts = [str(known[k]) if known and known.get(k) is not None else "" for k in ("steps", "tool_calls")]
    return [f"`{catalog.file_name(session)}`", catalog.local_date(session), session.agent,
            cell(session.model or ""), *counts, cell(session.title, REQUEST_CHARS),
            changed(session.cwd, known.get("files") if known else None)]


def changed(cwd: str | None, files) -> str:
    """The files a session changed, relative to its working directory when inside it, the first
    FILES_SHOWN of them and how many more."""
    if not isinstance(files, list):
        return ""
    shown = [_relative(p, cwd) for p in files[:FILES_SHOWN]]
    more = f" (+{len(files) - FILES_SHOWN} more)" if len(files) > FILES_SHOWN else ""
    return cell(", ".join(shown) + more)


def _relative(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip(os.sep) + os.sep):
        return path[len(cwd.rstrip(os.sep)) + 1:]
    return path
