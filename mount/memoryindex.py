"""INDEX.md beside the session files (in the mount and in an export): one line per session,
newest first, for an agent to pick the one card or file to open: its file name (its card is the
`.card.md` of the same name), date, agent, title, and, from the document's facts (known when it
was rendered since it last changed: `export`, `list --steps`, a read, the mount's warm-up), its
steps, outcome, the commits it made (short hashes), the files it changed in the project (those
outside it counted), the git branches it ran on, and the directory it ran in when that is
not the project's root (a worktree). Nothing is rendered here: the mount has the sessions whose
facts are not known rendered before its first answer (memoryfs), an export renders every session
first; a field not known yet is blank."""

from __future__ import annotations

import bisect
import os

from core.output import cell, table
from discovery import catalog
from rendering import documents
from rendering import cards
from rendering.cards import relative

INDEX = "INDEX.md"
REQUEST_CHARS = 80
FILES_SHOWN = 3
COMMITS_SHOWN = 5
HEADERS = ["File", "Date", "Agent", "Steps", "Title", "Outcome", "Commits", "Files changed", "Branch"]


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
    sharers = [catalog.origin(s).contributor for s in sessions]
    if any(by is not None for by in sharers):  # who shared each pulled session (pulled.py)
        headers = headers + ["Shared by"]
        rows = [r + [by or ""] for r, by in zip(rows, sharers)]
    missing = sum(1 for f in found if f is None)
    note = ""
    if missing and unknown is not None:
        note = (f" {missing} session(s) are still being read: their rows have blank Steps, Outcome, "
                f"Commits, Files changed and Branch; read INDEX.md again in a few seconds.")
    elif missing:
        note = (f" Steps, outcome, branch, commits and files changed are blank for the {missing} session(s) not "
                f"rendered since they last changed (open a file once, or run `trajectoriz list --steps`).")
    return (f"# Index of the sessions of {cell(project or 'every project')}\n\n"
            f"{len(rows)} session(s), newest first. Read a session's card first (the `.card.md` of its "
            f"file's name), then grep its `.transcript.md` (the conversation as text), and its `.atif.json` "
            f"with jq only for a whole output.{note}\n\n{table(headers, rows)}\n").encode()


def row(session, known: dict | None, project: str | None) -> list[str]:
    """A session's cells; with `project`, the last one is its directory when not the project's root."""
    known = known or {}
    commits = known.get("commits") if isinstance(known.get("commits"), list) else []
    shown = ", ".join(commits[:COMMITS_SHOWN]) + (f" (+{len(commits) - COMMITS_SHOWN})" if len(commits) > COMMITS_SHOWN else "")
    cells = [f"`{catalog.file_name(session)}`", catalog.local_date(session), session.agent,
             str(known["steps"]) if known.get("steps") is not None else "",
             cell(catalog.title(session, known), REQUEST_CHARS), cell(known.get("outcome") or ""),
             cell(shown), changed(session.cwd, known.get("files"), project or session.cwd),
             cell(", ".join(b for b in known.get("branches") or () if isinstance(b, str)))]
    if project is not None:
        where = relative(catalog.listing_text(session.cwd), project) if _elsewhere(session.cwd, project) else ""
        cells.append(cell(where))
    return cells


def _elsewhere(cwd: str | None, project: str | None) -> bool:
    """Whether a session ran somewhere other than the project's root (in --all: anywhere)."""
    return bool(cwd) and cwd.rstrip(os.sep) != (project or "").rstrip(os.sep)


def changed(cwd: str | None, files, root: str | None = None) -> str:
    """The files a session changed inside `root` (the project, else its working directory),
    relative to its working directory when inside it, the first FILES_SHOWN of them and how
    many more; those outside `root` (a plan under ~/.claude/plans/) only counted."""
    if not isinstance(files, list):
        return ""
    inside = [p for p in files if isinstance(p, str) and _under(p, root or cwd)]
    outside = len(files) - len(inside)
    shown = [relative(p, cwd) for p in inside[:FILES_SHOWN]]
    more = f" (+{len(inside) - FILES_SHOWN} more)" if len(inside) > FILES_SHOWN else ""
    elsewhere = f"{'; ' if shown else ''}{outside} outside the project" if outside else ""
    return cell(", ".join(shown) + more + elsewhere)


def _under(path: str, root: str | None) -> bool:
    """Whether `path` is `root` or inside it (by path components); anything is, without a root.
    A relative path is the working directory's (a pulled document names the work tree's files so,
    sharing/paths.py); one under `~` (its home) is not the project's."""
    if path.startswith("~"):
        return False
    if not root or not os.path.isabs(path):
        return True
    root = root.rstrip(os.sep) or os.sep
    return path == root or path.startswith(root + os.sep) or root == os.sep


def related(project: str | None, sessions: list, found: list) -> dict:
    """card name -> its related sessions' section (cards.related) for each of `sessions` that
    has one, from their facts (`found`, in the same order; None where not known), among the
    sessions of its project (without one, of its working directory): the mount and `export`
    add it to the card, so both serve the same bytes."""
    by_project: dict = {}  # in a listing of every project (`export --all`), by working directory
    for s, f in zip(sessions, found):
        if isinstance(f, dict) and f.get("span"):
            by_project.setdefault(s.cwd if project is None else None, []).append((s, f))
    sections = {}
    window = cards.RELATED_HOURS * 3600
    for group in by_project.values():
        group.sort(key=lambda pair: pair[1]["span"][0])  # by start: those close in time are near
        starts = [facts["span"][0] for _, facts in group]
        longest = max(facts["span"][1] - facts["span"][0] for _, facts in group)
        ties = [_ties(facts) for _, facts in group]
        for at, (session, facts) in enumerate(group):
            low = bisect.bisect_left(starts, facts["span"][0] - window - longest)
            high = bisect.bisect_right(starts, facts["span"][1] + window)
            near = [(catalog.file_name(group[n][0]), group[n][1]) for n in range(low, high)
                    if n != at and ties[at] & ties[n]]
            section = cards.related(facts, near, session.cwd) if near else ""
            if section:
                sections[cards.card_name(catalog.file_name(session))] = section
    return sections


def _ties(facts: dict) -> set:
    """What ties a session to another (cards.related): each file it changed, each branch but a trunk."""
    files = {("file", p) for p in facts.get("files") or () if isinstance(p, str)}
    return files | {("branch", b) for b in facts.get("branches") or () if isinstance(b, str) and b not in cards.TRUNKS}
