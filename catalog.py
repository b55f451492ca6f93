"""Which sessions exist, what they are called, and which project they belong to.

Discovery asks every agent module for its sources, re-scans only the sources whose fingerprint
changed since the last run (`index` cache), gives each session a short id that is unique in
the whole catalog, and sorts newest first. Nothing here parses a session beyond its head.
The archive (archive.py) is one more source of each agent: a session it holds whose native
record is gone is listed from its archived discovery record, with the same id and file name.

A native id found in two sources of one agent is one session (a copy, an older format beside
the newer one): the first source wins. For agents that keep sessions in per-project folders
(`SESSIONS_PER_PROJECT`), the same id in two projects is two sessions (a conversation resumed
elsewhere): each is kept in its own project, under its own short id (`mark_twins`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime

import agents
import archive
import cache
import mounts
import safepath
from agents.base import TITLE_CHARACTERS, Session
from errors import UserError
from output import printable
from redact import markers_of, redact_text

SHORT_HEX = 8


@dataclass
class SourceProblem:
    agent: str
    source: str
    reason: str


@dataclass
class Catalog:
    sessions: list[Session]
    problems: list[SourceProblem] = field(default_factory=list)
    sources: dict = field(default_factory=dict)   # agent -> list of source paths seen

    def by_agent(self, name: str) -> list[Session]:
        return [s for s in self.sessions if s.agent == name]


def module_version(module) -> str:
    return str(getattr(module, "VERSION", 1))


def dependencies(module, source: str, env) -> list[str]:
    deps = getattr(module, "dependencies", None)
    return deps(source, env) if deps else [source]


def discover(env, names=None, use_cache: bool = True) -> Catalog:
    index = cache.load_shared(env, cache.INDEX_FILE) if use_cache else {}
    fresh: dict = {}
    sessions: list[Session] = []
    problems: list[SourceProblem] = []
    sources_seen: dict = {}
    avoided = mounts.avoided(env)
    stat_memo: dict = {}
    for module in _in_discovery_order(agents.modules(names)):
        cached = index.get(module.NAME) or {}
        entries = cached.get("sources", {}) if cached.get("version") == module_version(module) else {}
        kept: dict = {}
        seen: set = set()
        per_project = getattr(module, "SESSIONS_PER_PROJECT", False)
        sources_seen[module.NAME] = []
        try:
            source_list = list(_sources(module, env, sessions))
        except OSError as exc:
            problems.append(SourceProblem(module.NAME, "", f"cannot list the store: {exc}"))
            source_list = []
        for source in source_list:
            if mounts.inside(source, avoided):
                continue  # never read through a FUSE mount (see mounts.avoided)
            deps = dependencies(module, source, env)
            found_stats = cache.stats(deps, stat_memo)
            own = found_stats[0] if deps and deps[0] == source else _stat(source)
            if own is None or not (stat.S_ISREG(own.st_mode) or stat.S_ISDIR(own.st_mode)):
                continue  # regular files and folders only: a FIFO or device would block or never end
            sources_seen[module.NAME].append(source)
            fp = cache.fingerprint_of(found_stats)
            entry = entries.get(source)
            if entry and entry[0] == fp:
                found = [Session.from_cache(values) for values in entry[1]]
                kept[source] = entry
            else:
                found = _scan(module, source, env, problems)
                kept[source] = [fp, [s.to_cache() for s in found]]
            for session in found:
                identity = (session.native_id, session.cwd if per_project else None)
                if identity not in seen:  # one session in two sources: the first wins
                    seen.add(identity)
                    sessions.append(session)
        sessions.extend(_archived_only(module, env, seen, per_project))
        fresh[module.NAME] = {"version": module_version(module), "sources": kept}
    if use_cache and _changed(index, fresh, names):
        cache.save(env, cache.INDEX_FILE, {**index, **fresh})
    assign_short_ids(sessions)
    sessions.sort(key=lambda s: (-(s.started or 0), s.agent, s.native_id))
    return Catalog(sessions, problems, sources_seen)


def _archived_only(module, env, seen: set, per_project: bool) -> list[Session]:
    """The module's archived sessions that no live source holds any more (the live one wins)."""
    def listed(native_id: str, cwd: str | None) -> bool:
        return (native_id, cwd if per_project else None) in seen

    found = archive.sessions_of(env, module.NAME, listed)
    seen.update((s.native_id, s.cwd if per_project else None) for s in found)
    return found


def looking_in(env, project: str | None):
    """The environment for discovering `project`'s sessions: the stores kept inside projects are
    looked for in it (and above it), as they are in the current directory (`agents.projects`)."""
    return env if project is None else {**env, "PWD": project}


def _sources(module, env, sessions_so_far: list):
    if getattr(module, "STORES_IN_PROJECTS", False):
        return module.sources(env, list(dict.fromkeys(s.cwd for s in sessions_so_far if s.cwd)))
    return module.sources(env)


def _in_discovery_order(modules: list) -> list:
    """Stores kept inside projects last: they are looked for in the projects the other agents'
    sessions ran in."""
    return sorted(modules, key=lambda module: getattr(module, "STORES_IN_PROJECTS", False))


def _stat(path: str):
    try:
        return os.stat(path)
    except OSError:  # a dangling symlink is nothing
        return None


def _changed(old: dict, new: dict, names) -> bool:
    return any(old.get(name) != value for name, value in new.items())


def _scan(module, source: str, env, problems: list) -> list[Session]:
    """The module's scan, or, when the source cannot be read at all, one placeholder session so
    that the failure stays visible in listings, the mount and the health report."""
    try:
        return [untrusted(session) for session in module.scan(source, env)]
    except Exception as exc:  # a broken source must not hide the others
        reason = f"{type(exc).__name__}: {exc}"
        problems.append(SourceProblem(module.NAME, source, reason))
        try:
            started = os.stat(source).st_mtime
        except OSError:
            started = None
        return [Session(agent=module.NAME, native_id=os.path.basename(source), source=source,
                        started=started, title="(unreadable session)", extra={"scan_error": reason})]


def untrusted(session: Session) -> Session:
    """A scanned session made safe to keep, compare and print: every field comes from the store.
    A working directory no system call takes (a NUL in it, not a string) is dropped, so the
    session belongs to no project, and the document says why (`extra.discovery_warnings`,
    counted by `trajectoriz agents`); first message and model are plain valid text, secrets
    redacted (the index cache stores them, listings print them, and a search never matches
    inside a secret). Paths and ids stay as they are: they name files to open."""
    warnings = []
    if session.cwd is not None and not (isinstance(session.cwd, str) and "\0" not in session.cwd):
        warnings.append(f"the recorded working directory is not a usable path "
                        f"({printable(repr(session.cwd))[:200]}): the session belongs to no project")
        session.cwd = None
    if not isinstance(session.native_id, str):
        session.native_id = str(session.native_id)
    with markers_of(f"{session.agent}:{session.native_id}"):  # as in its document
        redacted_id = listing_text(session.native_id)
        if redacted_id != session.native_id:  # an id holding a secret: matched and printed redacted
            session.extra = {**session.extra, "shown_id": redacted_id}
        session.title = listing_title(session.title if isinstance(session.title, str) else "")
        session.model = listing_text(session.model) if isinstance(session.model, str) else None
    if warnings:
        session.extra = {**session.extra, "discovery_warnings": warnings}
    return session


def listing_text(text: str) -> str:
    return printable(redact_text(text)[0])


def listing_title(text: str, limit: int = TITLE_CHARACTERS) -> str:
    """A first message as `agents.base.one_line` gives it, redacted, then cut at `limit`."""
    title = listing_text(text)
    return title[: limit - 1] + "…" if len(title) > limit else title


def shown_id(session: Session) -> str:
    """The native id as printed and matched (`show ID`, search): redacted when it holds a
    secret, so that no prefix match can reveal one character by character."""
    return session.extra.get("shown_id") or session.native_id


# identity ------------------------------------------------------------------------------------------
def full_hash(session: Session) -> str:
    """The hash of a session's identity: its agent and native id (as shown: redacted, for an
    id holding a secret, so that the short id is no unkeyed digest of one); for the twin of a
    session with the same id in another project (`twin_of`), its working directory too."""
    identity = f"{session.agent}:{shown_id(session)}"
    if session.extra.get("twin"):
        identity += f"\0{session.cwd}"
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


def mark_twins(sessions: list[Session]) -> None:
    """Sessions of one agent sharing a native id (one conversation resumed in two projects)
    are all kept; the first one (by source path) keeps the plain identity, the others add
    their working directory to it, so that every id stays unique and stable."""
    first: dict = {}
    for session in sorted(sessions, key=lambda s: (s.agent, s.native_id, s.source, s.cwd or "")):
        key = (session.agent, session.native_id)
        if key in first:
            session.extra = {**session.extra, "twin": True}
        else:
            first[key] = session


def assign_short_ids(sessions: list[Session]) -> None:
    """`<prefix>-<hex>` from a hash of the native id: stable across runs, and lengthened (8, 12,
    16, ... hex digits) for exactly the sessions whose shorter ids would collide."""
    mark_twins(sessions)
    prefixes = {name: getattr(agents.load(name), "PREFIX", name[:2]) for name in
                {s.agent for s in sessions}}
    digests = [full_hash(s) for s in sessions]
    taken: dict = {}
    for digest in digests:
        taken[digest[:SHORT_HEX]] = taken.get(digest[:SHORT_HEX], 0) + 1
    for session, digest in zip(sessions, digests):
        width = SHORT_HEX
        if taken[digest[:width]] > 1:  # rare: widen until no other session shares the prefix
            rivals = [d for d in digests if d != digest and d[:width] == digest[:width]]
            while width < 64 and any(d[:width] == digest[:width] for d in rivals):
                width += 4
        session.short_id = f"{prefixes[session.agent]}-{digest[:width]}"


def local_time(session: Session) -> datetime | None:
    """When the session started, in local time; None when unknown, or when no date can be
    made of what the store (or a file's mtime) says: year 0, after 9999, not a number."""
    try:
        return datetime.fromtimestamp(session.started) if session.started is not None else None
    except (OverflowError, OSError, ValueError, TypeError):
        return None


def local_date(session: Session) -> str:
    moment = local_time(session)
    return "unknown" if moment is None else moment.strftime("%Y-%m-%d")


def file_name(session: Session) -> str:
    moment = local_time(session)
    date = moment.strftime("%Y-%m-%d") if moment is not None else "0000-00-00"
    return f"{date}_{session.agent}_{session.short_id}.atif.json"


def find(catalog: Catalog, ident: str) -> Session:
    """A session by short id (or a longer prefix of its hash), mount file name, or native id
    (or a unique prefix of it)."""
    ident = ident.strip()
    if ident.endswith(".atif.json"):
        ident = os.path.basename(ident)[: -len(".atif.json")].rsplit("_", 1)[-1]
    matches = [s for s in catalog.sessions if s.short_id == ident or shown_id(s) == ident]
    if not matches and "-" in ident:
        prefix, _, hex_part = ident.partition("-")
        if hex_part and all(c in "0123456789abcdef" for c in hex_part.lower()):
            matches = [s for s in catalog.sessions if s.short_id.split("-", 1)[0] == prefix
                       and full_hash(s).startswith(hex_part.lower())]
    if not matches and len(ident) >= 4:
        matches = [s for s in catalog.sessions if shown_id(s).startswith(ident)]
    if not matches:
        raise UserError(f"no session with id {ident!r} (try: trajectoriz list --all, or trajectoriz search)")
    if len(matches) > 1:
        listed = ", ".join(s.short_id for s in matches[:5])
        raise UserError(f"id {ident!r} is ambiguous: it matches {listed}")
    return matches[0]


# projects ----------------------------------------------------------------------------------------
def project_root(directory: str) -> str:
    """The project a directory belongs to: the enclosing git work tree, else the directory."""
    start = os.path.realpath(directory)
    current = start
    while True:
        if is_work_tree(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return start
        current = parent


def is_work_tree(directory: str) -> bool:
    """Whether `directory` is the top of a git work tree: its `.git` is a folder, or a file naming
    the repository (`gitdir: ...`, a linked worktree or a submodule). An empty or stray `.git`
    file does not make a project of its folder (it would widen the project to a parent of the
    real one)."""
    dot_git = os.path.join(directory, ".git")
    if os.path.isdir(dot_git):
        return True
    try:
        with open(dot_git, "rb") as handle:
            return handle.read(8) == b"gitdir: "
    except OSError:
        return False


class Scope:
    """Which sessions belong to a project: those whose working directory is the project or
    inside it, comparing path components after resolving symlinks, never string prefixes
    (`/src/proj-2` is not inside `/src/proj`). A session with no known directory belongs to no
    project."""

    def __init__(self, project: str, env=None):
        self._avoided = mounts.avoided(env if env is not None else os.environ)
        self._root = safepath.components(os.path.abspath(project), self._avoided)
        self.project = os.sep + os.sep.join(self._root or ())
        self._memo: dict = {}

    def contains(self, session: Session) -> bool:
        cwd = session.cwd
        if self._root is None or not safepath.usable(cwd):
            return False
        inside = self._memo.get(cwd)
        if inside is None:
            parts = safepath.components(cwd, self._avoided)
            inside = parts is not None and parts[: len(self._root)] == self._root
            self._memo[cwd] = inside
        return inside

    def filter(self, sessions: list[Session]) -> list[Session]:
        return [s for s in sessions if self.contains(s)]
