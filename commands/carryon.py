"""`trajectoriz resume` and `handoff`: carry on from a past session, in the agent that recorded it
or in another one.

`resume ID` runs the recording agent's own resume command (its module's `CLI`, agents/base.py)
in the session's working directory; `--prompt TEXT` sends one more request without the
interactive interface. A session the agent's store no longer holds (only in the archive), or
one a teammate shared, cannot be resumed by its agent: one line says so and names the handoff
that works, or, for an archived one, `--restore`, which puts the archived native files back
where the agent reads them (creating files only: the one write into an agent's store
trajectoriz ever makes, and only on that flag).

`handoff ID --to AGENT` starts AGENT in the session's working directory with a first prompt
that carries the session over (rendering/briefing.py). The session's transcript and document
are named where the mount shows them, else written to a private folder the prompt names.
`--print` prints the command line (and the prompt is in it) instead of running it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

import agents
from core import cache
from core.errors import UserError
from discovery import archive, catalog

HANDOFFS = "handoff"  # trajectoriz's private folder (cache) for the files a briefing names


# resume -------------------------------------------------------------------------------------------
def run_resume(args, env) -> int:
    session = catalog.find(catalog.discover_for(env, args.id), args.id)
    if args.restore:
        return _restore(session, env, args.print)
    module = agents.load(session.agent)
    key = "resume_prompt" if args.prompt is not None else "resume"
    template = _cli(module).get(key)
    origin = catalog.origin(session)
    if origin.kind == "shared":
        raise UserError(f"{session.short_id} was shared by {origin.contributor}: {_label(module)} here "
                        f"has no record of it to resume; carry it over instead: {_handoff_hint(session)}")
    if origin.kind == "archive":
        raise UserError(f"{session.short_id} is only in trajectoriz's archive ({_label(module)} deleted it): "
                        f"`trajectoriz resume {session.short_id} --restore` puts its files back, or carry it "
                        f"over: {_handoff_hint(session)}")
    if template is None or not _resumable_format(module, session):
        how = "without its interface" if key == "resume_prompt" and _cli(module).get("resume") else "from the command line"
        raise UserError(f"{_label(module)} cannot resume a session {how}; carry {session.short_id} over "
                        f"instead: {_handoff_hint(session)}")
    argv = _filled(template, session, args.prompt, args.agent_args)
    return _launch(argv, _directory(session), args.print)


def _resumable_format(module, session) -> bool:
    formats = _cli(module).get("formats")
    return formats is None or session.extra.get("format") in formats


def _restore(session, env, only_print: bool) -> int:
    """Put an archived session's native files back, creating each missing one, byte-identical
    to the archive; refuse when any of them exists (nothing is ever overwritten)."""
    if catalog.origin(session).kind != "archive":
        raise UserError(f"{session.short_id} is still in {_label(agents.load(session.agent))}'s store: "
                        f"nothing to restore (trajectoriz resume {session.short_id})")
    index = archive.load(env)
    entry = index["sessions"].get(session.extra["archived"]["key"])
    if not entry:
        raise UserError(f"{session.short_id}: the archive no longer holds it")
    files = [(path, fid, length) for path, kind, fid, length in entry["files"] if kind == "file"]
    there = [path for path, _, _ in files if os.path.lexists(path)]
    if there:
        raise UserError(f"{session.short_id}: {there[0]} exists: --restore only creates files, it never "
                        f"overwrites one (move it away first, or carry the session over: {_handoff_hint(session)})")
    for path, _, length in files:
        print(f"{'would write' if only_print else 'writing'} {path} ({length:,} bytes, from the archive)",
              file=sys.stderr)
    if only_print:
        return 0
    for path, fid, length in files:
        _write_new(path, lambda write, fid=fid, length=length: archive.read_version(
            env, fid, index["files"][fid], length, write))
    print(f"Restored {len(files)} file(s) of {session.short_id}: `trajectoriz resume {session.short_id}` "
          f"reopens it (once trajectoriz lists it from the store again)", file=sys.stderr)
    return 0


def _write_new(path: str, produce) -> None:
    """Create `path` (never replacing a file: O_EXCL) with what `produce(write)` writes; its
    folders are made private where missing. A failure removes the partial file."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise UserError(f"cannot create {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            produce(out.write)
    except BaseException:
        os.unlink(path)
        raise


# handoff ------------------------------------------------------------------------------------------
def run_handoff(args, env) -> int:
    from rendering import briefing, documents

    target = _target(args.to)
    session = catalog.find(catalog.discover_for(env, args.id), args.id)
    key = "start_prompt" if args.headless else "start"
    template = _cli(target).get(key)
    if template is None:
        raise UserError(f"{_label(target)} takes no first prompt {'without its interface' if args.headless else 'on its command line'}"
                        f"; agents that do: {', '.join(_targets(key))}")
    if args.budget < briefing.MIN_BUDGET:
        raise UserError(f"--budget {args.budget}: at least {briefing.MIN_BUDGET} tokens")
    doc, data = documents.document(session, env)
    where = _whereabouts(session, doc, data, env)
    prompt = briefing.briefing(doc, _described(session, doc), where, args.budget,
                               task=args.task or briefing.TASK)
    return _launch(_filled(template, session, prompt, args.agent_args), _directory(session), args.print)


def _whereabouts(session, doc: dict, data: bytes, env) -> list[str]:
    """Where the receiving agent finds the whole session: the mount's files when the project has
    a mount serving it, else its transcript and document written for it into trajectoriz's
    private cache (with --print too: the printed prompt names them)."""
    from core import mounts
    from rendering import transcript

    name = catalog.file_name(session)
    text = transcript.transcript_name(name)
    project = catalog.project_root(session.cwd) if session.cwd and os.path.isdir(session.cwd) else None
    point = os.path.join(project, "memory") if project else None
    if point and mounts.find(point) and os.path.exists(os.path.join(point, name)):
        folder = point
    else:
        folder = os.path.join(cache.cache_dir(env), HANDOFFS)
        cache.make_private_dirs(folder)
        cache.write_private(os.path.join(folder, name), data)
        cache.write_private(os.path.join(folder, text), transcript.memory_transcript(doc))
    return [f"its transcript (markdown, `## N` heads step N; grep it): {os.path.join(folder, text)}",
            f"its document (ATIF JSON, step N is .steps[N-1] for jq): {os.path.join(folder, name)}"]


def _described(session, doc: dict) -> str:
    module = agents.load(session.agent)
    model = (doc.get("agent") or {}).get("model_name")
    when = catalog.local_date(session)
    place = f" in {session.cwd}" if session.cwd else ""
    contributor = catalog.origin(session).contributor
    by = f", shared by {contributor}" if contributor is not None else ""
    return f"{_label(module)} session {session.short_id}{f' ({model})' if model else ''} of {when}{place}{by}"


def _target(name: str):
    try:
        module = agents.load(name)
    except (KeyError, ImportError, ValueError):
        module = None
    if module is None or not _cli(module).get("start"):
        raise UserError(f"--to {name}: not an agent trajectoriz can start; one of: {', '.join(_targets('start'))}")
    return module


def _targets(key: str) -> list[str]:
    return [name for name in agents.names() if _cli(agents.load(name)).get(key)]


# running ------------------------------------------------------------------------------------------
def _launch(argv: list[str], directory: str, only_print: bool) -> int:
    line = f"cd {shlex.quote(directory)} && {shlex.join(argv)}"
    if only_print:
        print(line)
        return 0
    if shutil.which(argv[0]) is None:
        raise UserError(f"{argv[0]}: not found on PATH; install it, or run: {line}")
    if not os.path.isdir(directory):
        raise UserError(f"{directory}: the session's working directory is gone; run it elsewhere: {shlex.join(argv)}")
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(directory)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        raise UserError(f"cannot run {argv[0]}: {exc.strerror}") from None
    return 0  # not reached


def _filled(template: tuple, session, prompt: str | None, extra: list | None = None) -> list[str]:
    """The template's words filled in; `extra` (the user's own arguments for the agent, given
    after `--`) goes after the program and its subcommand words, where every CLI takes options."""
    values = {"{id}": session.native_id, "{path}": session.source, "{prompt}": prompt or ""}
    words = [values.get(part, part) for part in template]
    at = 1
    while at < len(words) and not template[at].startswith(("-", "{")):
        at += 1
    return words[:at] + list(extra or ()) + words[at:]


def _directory(session) -> str:
    return session.cwd or os.getcwd()


def _cli(module) -> dict:
    return getattr(module, "CLI", None) or {}


def _label(module) -> str:
    return getattr(module, "ATIF_NAME", module.NAME)


def _handoff_hint(session) -> str:
    return f"trajectoriz handoff {session.short_id} --to {session.agent if _cli(agents.load(session.agent)).get('start') else 'claude'}"
