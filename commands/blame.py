"""`trajectoriz blame FILE [--line N]`: the sessions whose tool calls wrote or edited FILE.

Which sessions wrote which files is part of each document's facts (`documents.Facts`, the
`files` its writing calls name): a warm call reads no document but those of the sessions that
wrote FILE, and a cold one renders the project's sessions once, on every core, as `list --steps`
does. `--line N` keeps the writes whose text holds the line's current content; a line no
session wrote is said to be so, never attributed to the nearest session.
"""

from __future__ import annotations

import os
import re

from commands import basics
from core.errors import UserError
from core.output import cut_at_word, printable
from discovery import catalog, pulled
from rendering import documents, toolkinds

REQUEST_CHARS = 200


def run_blame(args, env) -> int:
    shown, paths, line = target(args.file, args.line)
    content = line_content(paths[0], line) if line is not None else None
    _, sessions, _ = basics.selected(args, env)
    found = [w for s in writers(sessions, paths, env) for w in session_writes(s, paths, env)]
    found.sort(key=lambda w: (w["started"], w["step"]))
    if content is not None:
        found = [w for w in reversed(found) if wrote_line(w, content)]
    for write in found:
        del write["text"], write["kind"]
    if args.json:
        basics.write(b"".join(_json_line(w) for w in found))
    else:
        basics.write(report(shown, line, content, found))
    return 0 if found else 1


def target(file: str, line: int | None) -> tuple[str, tuple, int | None]:
    """FILE as given (without `:N`), as the absolute paths a session may have named it by
    (symlinks resolved, and not), and the line `--line N` or `FILE:N` names."""
    match = re.fullmatch(r"(.+):(\d+)", file)
    if line is None and match and not os.path.exists(file):
        file, line = match.group(1), int(match.group(2))
    if line is not None and line < 1:
        raise UserError(f"--line {line}: lines are numbered from 1")
    return file, (os.path.realpath(file), os.path.normpath(os.path.abspath(file))), line


def line_content(path: str, line: int) -> str:
    """The line's current text, stripped; a missing or blank line is an error (nothing to find)."""
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if number == line:
                    text = raw.decode("utf-8", "replace").strip()
                    if not text:
                        raise UserError(f"{path}:{line} is blank: there is nothing to attribute")
                    return text
    except OSError as exc:
        raise UserError(f"{path}: cannot read it: {exc.strerror}") from None
    raise UserError(f"{path} has fewer than {line} lines")


def wrote_line(write: dict, content: str) -> bool:
    """Whether a change wrote a line holding `content`: a line of the text a write or an edit
    put there, stripped; in a shell command, the text between word boundaries (`hello-1` is not
    in `echo hello-1b`)."""
    if write["kind"] == "shell":
        return re.search(rf"(?<![\w-]){re.escape(content)}(?![\w-])", write["text"]) is not None
    return content in (line.strip() for line in write["text"].splitlines())


def writers(sessions: list, paths: tuple, env) -> list:
    """The sessions whose documents' facts say they wrote one of `paths` (a pulled session: as
    the pusher's work tree names them)."""
    facts = documents.Facts(env)
    try:
        known = facts.of_all(sessions)
    finally:
        facts.save()
    return [s for s, f in zip(sessions, known) if set(f.get("files") or ()) & set(pulled.as_pushed(s, paths))]


def session_writes(session, paths: tuple, env) -> list[dict]:
    doc = documents.translate(session, env)
    requests = last_requests(doc)
    paths = pulled.as_pushed(session, paths)
    return [{"id": session.short_id, "agent": session.agent, "date": catalog.local_date(session),
             "started": session.started or 0, "native_id": printable(catalog.shown_id(session)),
             "file": catalog.file_name(session), "shared_by": catalog.origin(session).contributor,
             "step": w["step"], "tool": w["tool"],
             "request": requests.get(w["step"], ""), "diff": toolkinds.short_diff(w["old"], w["new"]),
             "text": w["text"],
             "kind": w["kind"]}
            for w in toolkinds.writes(doc) if set(w["paths"]) & set(paths)]


def last_requests(doc: dict) -> dict:
    """step id -> the user's request that led to it (the last user step before it), one line."""
    found, request = {}, ""
    for step in doc.get("steps") or ():
        if step.get("source") == "user" and isinstance(step.get("message"), str):
            request = cut_at_word(" ".join(step["message"].split()), REQUEST_CHARS)
        found[step.get("step_id")] = request
    return found


def report(file: str, line: int | None, content: str | None, found: list[dict]) -> str:
    if content is not None and not found:
        shown = catalog.listing_text(content[:80])
        return (f"No session found wrote line {line} of {file} ({shown!r}): it was written by hand, "
                f"or by a session or tool trajectoriz does not see.\n")
    if not found:
        missing = "" if os.path.lexists(file) else f" (there is no file {os.path.abspath(file)}: check its path)"
        return f"No session found wrote or edited {file}{missing}.\n"
    order = "most recent first" if content is not None else "oldest first"
    what = f"line {line} of {file}" if content is not None else file
    parts = [f"## Sessions that wrote {what} — {len(found)} change(s), {order}\n"]
    for w in found:
        diff = "\n".join("    " + line for line in w["diff"].splitlines())
        by = f", shared by {w['shared_by']}" if w["shared_by"] else ""
        parts.append(f"\n### {w['date']} {w['agent']} `{w['id']}` step {w['step']} ({w['tool']}{by})\n"
                     f"Request: {w['request'] or '(none recorded)'}\n{diff}\n")
    return printable("".join(parts))


def _json_line(write: dict) -> bytes:
    from core.jsonlib import orjson

    return orjson.dumps({k: v for k, v in write.items() if k != "started"}) + b"\n"
