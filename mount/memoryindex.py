"""INDEX.md beside the session files (in the mount and in an export): one line per session,
newest first, for an agent to pick the one card or file to open: its file name (its card is the
`.card.md` of the same name), date, agent, title, and, from the document's facts (known when it
was rendered since it last changed: `export`, `list --steps`, a read, the mount's warm-up), its
steps, outcome, the commits it made (short hashes), the files it changed, and the directory it
ran in when that is not the project's root (a worktree). Nothing is rendered here: the mount
has the sessions whose facts are not known rendered before its first answer (memoryfs), an
export renders every session first; a field not known yet is blank."""

from __future__ import annotations

import os

from core.output import cell, table
from discovery import catalog, pulled
from rendering import documents
from rendering.cards import relative

INDEX = "INDEX.md"
REQUEST_CHARS = 100
FILES_SHOWN = 5
COMMITS_SHOWN = 5
HEADERS = ["File", "Date", "Agent", "Steps", "Title", "Outcome", "Commits", "Files changed"]


def index(project: str | None, sessions: list, facts: documents.Facts, env, known=None, unknown=None) -> bytes:
    """The index of `sessions` (in their order: discovery's, newest first). `known(session)`:
    what discovery has checked of it (`Catalog.known`, or None), which spares stat'ing its files;
    `unknown([(session, stamp), ...])` is handed the sessions whose facts are not known, before the
    index is made (the mount has them rendered, on every core, while the reader waits, for a bounded
    time): what it found is in the index; a session still unknown is said to be pending."""
    known = known or (lambda s: None)
    stamps = [documents.cache_stamp(s, env, facts.redact, known(s)) for s in sessions]
    found = [facts.get(s, stamp) for s, stamp in zip(sessions, stamps)]
    if unknown is not None and None in found:
        unknown([(s, stamp) for s, stamp, f in zip(sessions, stamps, found) if f is None])
        found = [f if f is not None else facts.get(s, stamp) for s, stamp, f in zip(sessions, stamps, found)]
    elsewhere = any(_elsewhere(s.cwd, project) for s in sessions)
    headers = HEADERS + (["Directory"] if elsewhere else [])
    rows = [row(s, f, project if elsewhere else None) for s, f in zip(sessions, found)]
    if any(pulled.marked(s) for s in sessions):  # who shared each pulled session (pulled.py)
        headers = headers + ["Shared by"]
        rows = [r + [pulled.contributor_of(s) or ""] for r, s in zip(rows, sessions)]
    missing = sum(1 for f in found if f is None)
    note = ""
    if missing and unknown is not None:
        note = (f" {missing} session(s) are still being read: their rows have blank Steps, Outcome, "
                f"Commits and Files changed; read INDEX.md again in a few seconds.")
    elif missing:
        note = (f" Steps, outcome, commits and files changed are blank for the {missing} session(s) not "
                f"rendered since they last changed (open a file once, or run `trajectoriz list --steps`).")
    return (f"# Index of the sessions of {cell(project or 'every project')}\n\n"
            f"{len(rows)} session(s), newest first: one line each. Read a session's card first (the "
            f"`.card.md` of its file's name: its requests, outcome, commits, files, commands), then "
            f"its `.atif.json` with jq for details.{note}\n\n{table(headers, rows)}\n").encode()


def row(session, known: dict | None, project: str | None) -> list[str]:
    """A session's cells; with `project`, the last one is its directory when not the project's root."""
    known = known or {}
    commits = known.get("commits") if isinstance(known.get("commits"), list) else []
    shown = ", ".join(commits[:COMMITS_SHOWN]) + (f" (+{len(commits) - COMMITS_SHOWN})" if len(commits) > COMMITS_SHOWN else "")
    cells = [f"`{catalog.file_name(session)}`", catalog.local_date(session), session.agent,
             str(known["steps"]) if known.get("steps") is not None else "",
             cell(catalog.title(session, known), REQUEST_CHARS), cell(known.get("outcome") or ""),
             cell(shown), changed(session.cwd, known.get("files"))]
    if project is not None:
        where = relative(catalog.listing_text(session.cwd), project) if _elsewhere(session.cwd, project) else ""
        cells.append(cell(where))
    return cells


def _elsewhere(cwd: str | None, project: str | None) -> bool:
    """Whether a session ran somewhere other than the project's root (in --all: anywhere)."""
    return bool(cwd) and cwd.rstrip(os.sep) != (project or "").rstrip(os.sep)


def changed(cwd: str | None, files) -> str:
    """The files a session changed, relative to its working directory when inside it, the first
    FILES_SHOWN of them and how many more."""
    if not isinstance(files, list):
        return ""
    shown = [relative(p, cwd) for p in files[:FILES_SHOWN]]
    more = f" (+{len(files) - FILES_SHOWN} more)" if len(files) > FILES_SHOWN else ""
    return cell(", ".join(shown) + more)
