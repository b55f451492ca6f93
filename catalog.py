"""Which sessions exist, what they are called, and which project they belong to.

Discovery asks every agent module for its sources, re-scans only the sources whose fingerprint
changed since the last run (`index` cache), gives each session a short id that is unique in
the whole catalog, and sorts newest first. Nothing here parses a session beyond its head.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime

import agents
import cache
import mounts
from agents.base import Session
from errors import UserError

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
        seen_ids: set = set()
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
                if session.native_id not in seen_ids:  # the first source of an id wins
                    seen_ids.add(session.native_id)
                    sessions.append(session)
        fresh[module.NAME] = {"version": module_version(module), "sources": kept}
    if use_cache and _changed(index, fresh, names):
        cache.save(env, cache.INDEX_FILE, {**index, **fresh})
    assign_short_ids(sessions)
    sessions.sort(key=lambda s: (-(s.started or 0), s.agent, s.native_id))
    return Catalog(sessions, problems, sources_seen)


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
        return list(module.scan(source, env))
    except Exception as exc:  # a broken source must not hide the others
        reason = f"{type(exc).__name__}: {exc}"
        problems.append(SourceProblem(module.NAME, source, reason))
        try:
            started = os.stat(source).st_mtime
        except OSError:
            started = None
        return [Session(agent=module.NAME, native_id=os.path.basename(source), source=source,
                        started=started, title="(unreadable session)", extra={"scan_error": reason})]


# identity ------------------------------------------------------------------------------------------
def full_hash(session: Session) -> str:
    return hashlib.sha256(f"{session.agent}:{session.native_id}".encode()).hexdigest()


def assign_short_ids(sessions: list[Session]) -> None:
    """`<prefix>-<hex>` from a hash of the native id: stable across runs, and lengthened (8, 12,
    16, ... hex digits) for exactly the sessions whose shorter ids would collide."""
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


def local_date(session: Session) -> str:
    if session.started is None:
        return "unknown"
    return datetime.fromtimestamp(session.started).strftime("%Y-%m-%d")


def file_name(session: Session) -> str:
    date = local_date(session) if session.started is not None else "0000-00-00"
    return f"{date}_{session.agent}_{session.short_id}.atif.json"


def find(catalog: Catalog, ident: str) -> Session:
    """A session by short id (or a longer prefix of its hash), mount file name, or native id
    (or a unique prefix of it)."""
    ident = ident.strip()
    if ident.endswith(".atif.json"):
        ident = os.path.basename(ident)[: -len(".atif.json")].rsplit("_", 1)[-1]
    matches = [s for s in catalog.sessions if s.short_id == ident or s.native_id == ident]
    if not matches and "-" in ident:
        prefix, _, hex_part = ident.partition("-")
        if hex_part and all(c in "0123456789abcdef" for c in hex_part.lower()):
            matches = [s for s in catalog.sessions if s.short_id.split("-", 1)[0] == prefix
                       and full_hash(s).startswith(hex_part.lower())]
    if not matches and len(ident) >= 4:
        matches = [s for s in catalog.sessions if s.native_id.startswith(ident)]
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
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return start
        current = parent


def _components(path: str, avoided: list[str]) -> tuple:
    """The path's components, symlinks resolved, except inside a FUSE mount that discovery
    avoids: resolving looks at every component, and a hung mount would never answer."""
    resolved = os.path.abspath(path) if mounts.inside(path, avoided) else os.path.realpath(path)
    return tuple(part for part in resolved.split(os.sep) if part)


class Scope:
    """Which sessions belong to a project: those whose working directory is the project or
    inside it, comparing path components after resolving symlinks, never string prefixes
    (`/src/proj-2` is not inside `/src/proj`). A session with no known directory belongs to no
    project."""

    def __init__(self, project: str, env=None):
        self._avoided = mounts.avoided(env if env is not None else os.environ)
        self._root = _components(project, self._avoided)
        self.project = os.sep + os.sep.join(self._root)
        self._memo: dict = {}

    def contains(self, session: Session) -> bool:
        cwd = session.cwd
        if not cwd or not os.path.isabs(cwd):
            return False
        inside = self._memo.get(cwd)
        if inside is None:
            inside = _components(cwd, self._avoided)[: len(self._root)] == self._root
            self._memo[cwd] = inside
        return inside

    def filter(self, sessions: list[Session]) -> list[Session]:
        return [s for s in sessions if self.contains(s)]
