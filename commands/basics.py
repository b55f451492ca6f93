"""The bodies of `list`, `show`, `export` and `validate`, and the project selection every
command shares (`--all`, `--dir P`, or the current project)."""

from __future__ import annotations

import os
import sys

from core import cache
from core.errors import UserError
from core.output import cell, printable, table
from discovery import catalog


def selected(args, env, check_settled: bool = True) -> tuple[catalog.Catalog, list, str | None]:
    """The catalog, the sessions the command is about, and the project (None for --all). The
    project is where discovery looks for stores kept inside projects (Aider, Crush), wherever
    the command runs. `check_settled`: see catalog.discover."""
    project = None if getattr(args, "all", False) else catalog.chosen_project(args)
    found = catalog.discover(catalog.looking_in(env, project), within=project, check_settled=check_settled)
    sessions = found.sessions
    agent = getattr(args, "agent", None)
    if agent:
        import agents

        known = agents.names()
        if agent not in known:
            raise UserError(f"unknown agent {agent!r} (known: {', '.join(known)})")
        sessions = [s for s in sessions if s.agent == agent]
    if project is None:
        return found, sessions, None
    return found, catalog.Scope(project, env).filter(sessions), project


def write(text: str | bytes) -> None:
    out = sys.stdout.buffer
    if isinstance(text, str):
        try:
            text = text.encode()
        except UnicodeEncodeError:  # a lone surrogate, from a file name that is not UTF-8
            text = printable(text).encode()
    out.write(text)
    out.flush()


# list ---------------------------------------------------------------------------------------------
def run_list(args, env) -> int:
    from archiving import retention

    found, sessions, project = selected(args, env)
    retention.warn_at_risk(found, env)
    rows = list(zip(sessions, known_facts(found, sessions, env, args.steps)))
    if args.json:
        from core.jsonlib import orjson

        write(b"".join(orjson.dumps({**listing_record(s, f), "steps": f and f["steps"], "bytes": f and f["size"]})
                       + b"\n" for s, f in rows))
        return 0
    sharers = [catalog.origin(s).contributor for s, _ in rows]
    shared = any(by is not None for by in sharers)  # a column of who shared each, when some are
    headers = ["ID", "Agent", "Date", "Steps", *(["Project"] if project is None else []),
               *(["Shared by"] if shared else []), "Title"]
    where = project_column(env)
    body = table(headers, [[f"`{s.short_id}`", s.agent, catalog.local_date(s), str(f["steps"]) if f else "",
                            *([where(s)] if project is None else []),
                            *([by or ""] if shared else []), cell(catalog.title(s, f), 80)]
                           for (s, f), by in zip(rows, sharers)])
    write(f"## Sessions of {where_shown(project, args)} — {len(rows)} session(s)\n\n{body}\n")
    if not rows:
        write(f"\n{catalog.empty_hint(found, project, env)}\n")
    return 0


def where_shown(project: str | None, args) -> str:
    """The heading's project; saying so when it is a folder outside any git work tree (the
    current directory is then the project)."""
    if project is None:
        return "every project"
    if not getattr(args, "dir", None) and not catalog.is_work_tree(project):
        return f"{project} (no git work tree here: the current directory is the project)"
    return project


def project_cell(session, env) -> str:
    """A session's working directory for a table of several projects: ~ for $HOME, long ones
    cut from the left."""
    return project_column(env)(session)


def project_column(env):
    """`project_cell` for the rows of one table: each directory worked out once."""
    home = env.get("HOME", "").rstrip(os.sep)
    done: dict = {None: "(none recorded)", "": "(none recorded)"}

    def cell_of(session) -> str:
        found = done.get(session.cwd)
        if found is None:
            cwd = catalog.listing_text(session.cwd)
            if home and (cwd == home or cwd.startswith(home + os.sep)):
                cwd = "~" + cwd[len(home):]
            found = done[session.cwd] = cell(cwd if len(cwd) <= 40 else "…" + cwd[-39:])
        return found
    return cell_of


def known_facts(found: catalog.Catalog, sessions: list, env, translate: bool) -> list:
    """Each session's document facts (steps, size) when a document was rendered before and its
    session did not change since, else None: a listing renders nothing (`--steps` translates
    the others, on every core). A session never rendered is not looked at."""
    from rendering import documents

    facts = documents.Facts(env)
    if not translate:
        return [facts.get(s, documents.cache_stamp(s, env, known=found.known(s))) if facts.has(s) else None
                for s in sessions]
    try:
        return facts.of_all(sessions)
    finally:
        facts.save()


def listing_record(session, facts: dict | None = None) -> dict:
    """A session as `list --json` and `search --json` print it. Title, first message and model
    were made listing text by discovery (`catalog.untrusted`; the title is its document's when
    its `facts` are known); ids and paths are the store's, made printable (a file name that is
    not UTF-8) and redacted too. `archived`: listed from the archive, its native record being
    gone; `shared_by`: the contributor whose push it was pulled from (discovery/pulled.py), None
    for this machine's own; `branch` and `branches`: the git branch the session ended on and
    every one it ran on, as its agent recorded them (known once it was rendered: its facts)."""
    origin = catalog.origin(session)
    record = {"id": session.short_id, "agent": session.agent, "date": catalog.local_date(session),
              "started": session.started, "native_id": printable(catalog.shown_id(session)),
              "cwd": catalog.listing_text(session.cwd) if session.cwd else None,
              "model": session.model, "title": catalog.title(session, facts),
              "first_message": catalog.first_message(session),
              "file": catalog.file_name(session), "source": catalog.listing_text(session.source),
              "archived": origin.kind == "archive", "shared_by": origin.contributor}
    branches = [b for b in (facts or {}).get("branches") or () if isinstance(b, str)]
    record["branch"] = branches[-1] if branches else None  # where it ended; None: not recorded, or not known yet
    record["branches"] = branches
    return record


# show ---------------------------------------------------------------------------------------------
def run_show(args, env) -> int:
    """The whole document as the mount serves it; or a part of it (a sub-agent, a step, a range
    of steps) as JSON; or, with --markdown, any of these as a readable transcript."""
    from rendering import documents

    session = catalog.find(catalog.discover_for(env, args.id), args.id)
    redact = not args.no_redact
    if getattr(args, "html", False) or getattr(args, "out", None):
        return show_html(session, args, env, redact)
    if not (args.markdown or args.subagent or args.steps or args.step is not None):
        facts = documents.Facts(env, redact)  # what it rendered, `list` shows without rendering
        write(facts.rendered(session)[1])
        facts.save()
        return 0
    from atif.serialize import dumps
    from rendering import transcript

    doc = documents.translate(session, env, redact)
    steps = str(args.step) if args.step is not None else args.steps
    if args.markdown:  # with no part asked for and the default cap: the transcript's file in the mount
        write(transcript.render(doc, args.subagent, steps, args.max_chars))
        return 0
    trajectory = transcript.subagent(doc, args.subagent) if args.subagent else doc
    if steps is None:
        write(dumps(trajectory))
        return 0
    first, last = transcript.step_range(steps, len(trajectory["steps"]))
    part = trajectory["steps"][first - 1: last]
    write(dumps(part[0]) if args.step is not None else dumps(part))
    return 0


def show_html(session, args, env, redact: bool) -> int:
    """`show ID --html [--out FILE]`: the session's page (rendering/page.py), of the same
    document `show` prints."""
    from rendering import documents, page

    if not args.html:
        raise UserError("--out goes with --html (the page's file)")
    if args.markdown or args.subagent or args.steps or args.step is not None:
        raise UserError("--html shows the whole session (sub-agents nested): drop --markdown, --step, --steps, --subagent")
    data = page.render(documents.translate(session, env, redact))
    if args.out is None:
        write(data)
        return 0
    try:
        cache.write_private(os.path.abspath(args.out), data)
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot write it: {exc.strerror}") from None
    said = "redacted; read it before you share it" if redact else "NOT redacted (--no-redact): do not share it"
    print(f"Wrote {args.out} ({len(data):,} bytes): {said}", file=sys.stderr)
    return 0


# export -------------------------------------------------------------------------------------------
# The files export wrote into each folder (folder -> names), so that --delete removes only
# those: kept in trajectoriz's cache, not in the folder, which holds exactly what the mount shows.
EXPORTS_FILE = f"exports-v1-py{sys.version_info[0]}{sys.version_info[1]}.bin"
DOCUMENTS = ".atif"  # the folder of an export that holds the documents its `.atif.json` links name


def run_export(args, env) -> int:
    """Write the sessions' files into the folder, adding and updating; with --delete, also remove
    the files an earlier export wrote there whose sessions this one no longer has. Files that
    export did not write (not in the folder's manifest) are never touched."""
    from mount import guide, memoryindex

    _, sessions, project = selected(args, env)
    out = os.path.abspath(args.out)
    try:
        cache.make_private_dirs(out)
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot create it: {exc.strerror}") from None
    documents = os.path.join(out, DOCUMENTS)
    if os.path.islink(documents) or (os.path.exists(documents) and not os.path.isdir(documents)):
        raise UserError(f"--out {args.out}: its {DOCUMENTS} is not a folder of its own (a link or a file): "
                        f"the documents are not written through it")
    written, facts = _export_all(sessions, out, env, not args.no_redact)
    _add_related(project, sessions, facts, out)
    exports = cache.load(env, EXPORTS_FILE)
    earlier = _exported(exports.get(out))
    removed = _remove_files(out, earlier - written) if args.delete else 0
    kept = written if args.delete else written | {n for n in earlier if os.path.exists(os.path.join(out, n))}
    cache.save(env, EXPORTS_FILE, {**exports, out: sorted(kept)})
    documents_kept = sorted(n for n in kept if n.endswith(".atif.json"))
    cache.write_private(os.path.join(out, "README.md"), guide.readme(project, documents_kept, mounted=False))
    cache.write_private(os.path.join(out, memoryindex.INDEX), memoryindex.index(project, sessions, facts, env))
    note = f", removed {removed} an earlier export wrote" if removed else ""
    print(f"Exported {len(sessions)} session(s) to {out}{note}", file=sys.stderr)
    return 0


def _export_all(sessions: list, out: str, env, redact: bool) -> tuple[set, object]:
    """Write every session's document into `out`, on every core, with progress on a terminal;
    the names written, and the facts of the documents (documents.Facts). Each worker renders and writes its sessions' files and hands back their
    facts only (documents never travel between processes)."""
    from core import parallel
    from rendering import documents

    facts = documents.Facts(env, redact)
    progress = parallel.Progress(len(sessions), "exporting")
    written = set()
    try:
        for session, (names, totals) in zip(sessions, parallel.ordered(export_one, sessions, (out, env, redact))):
            facts.put(session, totals)
            written.update(names)
            progress.step()
    finally:
        progress.clear()
        facts.save()
    return written, facts


def _add_related(project, sessions: list, facts, out: str) -> None:
    """Each card's related sessions (mount/memoryindex.related), added once every session's
    facts are known, as the mount serves them."""
    from mount import memoryindex
    from rendering import documents

    known = [facts.entries.get(documents.cache_key(s)) for s in sessions]  # as this export recorded them
    for card, section in memoryindex.related(project, sessions, known).items():
        with open(os.path.join(out, card), "ab") as handle:
            handle.write(section.encode("utf-8", "surrogatepass"))


def export_one(session, out: str, env, redact: bool) -> tuple[tuple, dict]:
    """(names of the files written, document facts) of one session written into `out` (a pool
    worker's job): its document, its card and its transcript, the bytes the mount serves, laid
    out as the mount lays them (`write_document`). The stamp is taken before translating, so a
    session that changes meanwhile is re-done next time."""
    from rendering import cards, documents, transcript

    name = catalog.file_name(session)
    stamp = documents.cache_stamp(session, env, redact)
    doc, data = documents.document(session, env, redact)
    card, text = cards.card_name(name), transcript.transcript_name(name)
    found = cards.facts(doc)  # once, for the card and the facts
    write_document(out, name, data)
    cache.write_private(os.path.join(out, card), cards.render(doc, found))
    cache.write_private(os.path.join(out, text), transcript.memory_transcript(doc))
    return (name, card, text), documents.totals(doc, data, stamp, found)


def write_document(out: str, name: str, data: bytes) -> None:
    """The document in the folder `.atif/`, and `name` beside the cards a relative symlink to
    it, as in the mount: `jq`, `cat` and `Read` of `name` read the document, while `rg -n`
    (which skips hidden folders and follows no symlink) returns lines of cards and transcripts
    only. `grep -r` follows no symlink either, but reads `.atif/`: once, not twice."""
    cache.write_private(os.path.join(out, DOCUMENTS, name), data)
    link, target = os.path.join(out, name), os.path.join(DOCUMENTS, name)
    if os.path.islink(link) and os.readlink(link) == target:
        return
    temporary = os.path.join(out, f".{name}.{os.getpid()}.link.tmp")
    os.symlink(target, temporary)
    try:
        os.replace(temporary, link)  # (a plain file an older export wrote becomes the link)
    except OSError:
        os.unlink(temporary)
        raise


def _exported(names) -> set:
    """The session files, cards and transcripts an earlier export wrote into a folder, as its
    entry in EXPORTS_FILE says (bare names only: nothing outside the folder is ever named)."""
    if not isinstance(names, list):
        return set()
    return {n for n in names if isinstance(n, str) and n == os.path.basename(n)
            and n.endswith((".atif.json", ".card.md", ".transcript.md"))}


def _remove_files(out: str, names: set) -> int:
    """Remove the files `names` (a document's link with its document in `.atif/`); how many."""
    removed = 0
    for name in names:
        if name.endswith(".atif.json"):
            _remove(os.path.join(out, DOCUMENTS, name))
        removed += _remove(os.path.join(out, name))
    return removed


def _remove(path: str) -> bool:
    try:
        os.remove(path)
        return True
    except FileNotFoundError:
        return False


# validate -----------------------------------------------------------------------------------------
def run_validate(args, env) -> int:
    from atif.serialize import loads
    from atif.validate import validate

    invalid = 0
    for path in args.files:
        try:
            with open(path, "rb") as handle:
                doc = loads(handle.read())
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            invalid += 1
            continue
        except ValueError as exc:
            print(f"{path}: not valid JSON: {exc}")
            invalid += 1
            continue
        errors, warnings = validate(doc, base_dir=os.path.dirname(os.path.abspath(path)))
        for warning in warnings:
            print(f"{path}: warning: {warning}")
        if errors:
            invalid += 1
            for error in errors:
                print(f"{path}: {error}")
        elif not args.quiet:
            print(f"{path}: valid {doc.get('schema_version', 'ATIF-v1.7')}")
    return 1 if invalid else 0
