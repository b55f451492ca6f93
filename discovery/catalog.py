"""Which sessions exist, what they are called, and which project they belong to.

Discovery asks every agent module for its sources, re-scans only the sources whose fingerprint
changed since the last run (`index` cache), gives each session a short id that is unique in
the whole catalog, and sorts newest first. Nothing here parses a session beyond its head.
The archive (discovery/archive.py) is one more source of each agent: a session it holds whose native
record is gone is listed from its archived discovery record, with the same id and file name.

A native id found in two sources of one agent is one session (a copy, an older format beside
the newer one): the first source wins. For agents that keep sessions in per-project folders
(`SESSIONS_PER_PROJECT`), the same id in two projects is two sessions (a conversation resumed
elsewhere): each is kept in its own project, under its own short id (`mark_twins`).
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections import namedtuple
from datetime import datetime

import agents
from agents import titles
from agents.base import reading, Session, TITLE_CHARACTERS
from core import cache, mounts, safepath, storefs
from core.errors import UserError
from core.hashes import sha256
from core.output import printable
from discovery import archive, pulled, snapshot
from discovery.origin import module_version
from discovery.store import Store, dependencies

SHORT_HEX = 8


class SourceProblem(namedtuple("SourceProblem", "agent source reason")):
    """A source, or a whole store, that could not be read (`trajectoriz agents` counts them)."""
    __slots__ = ()


class Catalog:
    """The sessions a discovery found, newest first, and what it knows of their sources."""

    def __init__(self, sessions: list[Session], found_problems: list | None = None,
                 sources_seen: dict | None = None, versions: dict | None = None,
                 snapshot: "snapshot.Snapshot | None" = None, rest: list | None = None):
        self.sessions = sessions
        self.found_problems = found_problems or []
        self.sources_seen = sources_seen or {}  # agent -> list of source paths seen
        self.native: dict = {}    # source -> [native files, last mtime seen, their current
                                  # fingerprint, settled] (snapshot.Made)
        self.stats: dict = {}     # path -> os.stat result (None: missing) of the native files
                                  # discovery stat'ed: `documents.stamps` of a push reuses them
        self.versions = versions or {}          # agent -> its translator's version
        self.snapshot = snapshot                # what a warm discovery read
        self.rest = rest or []                  # the snapshot's groups left out (other projects')
        self.scoped = False                     # whether discovery left out sources of other projects

    def by_agent(self, name: str) -> list[Session]:
        return [s for s in self.sessions if s.agent == name]

    @property
    def problems(self) -> list[SourceProblem]:
        """The stores that could not be read (from the snapshot when discovery read one)."""
        if self.snapshot is not None and not self.found_problems:
            self.found_problems = [SourceProblem(*p) for p in self.snapshot.extras()[0]]
        return self.found_problems

    @property
    def sources(self) -> dict:
        """agent -> the source paths seen (from the snapshot when discovery read one)."""
        if self.snapshot is not None and not self.sources_seen:
            self.sources_seen = self.snapshot.extras()[1]
        return self.sources_seen

    def known(self, session: Session) -> tuple | None:
        """(native files, translator version, the files' fingerprint) of a session, as discovery
        found them (and checked, for the sessions it returned)."""
        entry = self.native.get(session.source)
        version = self.versions.get(session.agent)
        return (entry[0], version, entry[2]) if entry and version is not None else None

    def everything(self) -> list[Session]:
        """Every session, those of the groups a project's discovery left out included."""
        return self.sessions + self.of_agent(None)

    def of_agent(self, agent: str | None, modified_before: float | None = None) -> list[Session]:
        """The sessions the groups left out hold of `agent` (None: of every agent); with
        `modified_before`, only groups holding some last seen modified earlier are decoded."""
        rows = [row for row in self.rest if (agent is None or row[1] == agent)
                and (modified_before is None or row[5] is None or row[5] < modified_before)]
        return self.snapshot.sessions(rows, self.native) if rows else []

    def folders_of(self, agent: str) -> set:
        """The working directories of an agent's sessions, those left out included."""
        return {s.cwd for s in self.sessions if s.agent == agent} | {row[0] for row in self.rest if row[1] == agent}


def origin(session: Session):
    """Where the session's bytes live (discovery/origin.py), as the catalog chose when it listed
    it: the archive's or a pull's, by the mark each leaves in the session's `extra` (which its
    cached record keeps), else its agent's store."""
    if "archived" in session.extra:
        return archive.Archived(session)
    if "shared" in session.extra:
        return pulled.Pulled(session)
    return Store(session)


def discover(env, names=None, use_cache: bool = True, within: str | None = None,
             check_settled: bool = True) -> Catalog:
    """`discovered`, with the sessions pulled from the remote of the repository around `within`
    (or the current directory) beside the stores' (`pulled`)."""
    found = discovered(env, names, use_cache, within, check_settled)
    with_pulled(env, found, within, names)
    return found


def with_pulled(env, found: Catalog, within: str | None, names=None) -> None:
    """Add to a catalog the sessions pulled into the repository around `within` (the current
    directory when None), of the agents `names` when given. A session also found in a store here
    (live or archived) is listed once: from the store when the store's copy is of this project,
    else from the pull (in this project's place), the store's copy left out, so that every
    command here (`show` as the mount) serves the same one, whatever else the catalog holds."""
    root = project_root(within or env.get("PWD") or os.getcwd())
    shared = pulled.sessions(env, root, names)
    if shared:
        keys = {(s.agent, s.native_id) for s in shared}
        twins = [s for s in found.sessions if (s.agent, shown_id(s)) in keys]
        scope = Scope(root, env)
        here = {(s.agent, shown_id(s)) for s in twins if scope.contains(s)}
        shared = [s for s in shared if (s.agent, s.native_id) not in here]
        away = {id(s) for s in twins if (s.agent, shown_id(s)) not in here}
        kept = [s for s in found.sessions if id(s) not in away] if away else found.sessions
        found.sessions = sorted(kept + shared, key=lambda s: (-(s.started or 0), s.agent, s.native_id))


def discovered(env, names=None, use_cache: bool = True, within: str | None = None,
               check_settled: bool = True) -> Catalog:
    """Every session of the stores (of the agents `names`), newest first.

    A warm discovery reads the snapshot the previous one left (discovery/snapshot.py) when nothing it was
    made from changed: the folders its stores were listed from, and the sources that can change
    what they list without their folder showing it. Every source whose sessions it returns is
    checked (stat'ed) too. Given a project (`within`), it returns the project's sessions only
    (`Catalog.everything()` has the others, unchecked) and leaves the settled sources of other
    projects alone: a store that only appends (`APPENDS_ONLY`) adds to a transcript whose head
    says where it ran, which never moves it into the project; a new transcript shows in its
    folder, and one whose head is not complete yet is checked every time. Only rewriting a
    complete head in place, which these agents never do, is seen by the next discovery of
    every project (`list --all`, `search`) instead.

    Otherwise the stores are listed (a store's listing is reused while the folders it was made
    from did not change) and each source scanned again only when its fingerprint changed (the
    index); a snapshot is written for the next discovery.

    `check_settled=False` (a search of what listings show) spares the stat of each settled
    source's files: appending cannot change what it lists; the catalog then knows nothing of
    its sessions' files (`known` is None), which whoever renders them checks itself.

    A project's discovery without a snapshot leaves out the sources that show, by their path or
    their first line, that none of their sessions ran in the project (`outside` and `cwd_of` of
    an agent's module: a first `list` in a project reads that project's transcripts, not every
    one). Its snapshot serves that project only, and its `everything()` has the sessions of the
    sources it read."""
    cache.settle_writers()  # what an earlier discovery of this process is writing, written
    scope = Scope(within, env) if within else None
    names_tried = ([snapshot.key(env, names, within)] if within else []) + [snapshot.key(env, names)]
    found = _warm(env, names_tried, scope, check_settled) if use_cache else None
    if found is not None:
        return found
    made = snapshot.Made()
    made.archive = snapshot.archive_state(env)  # before the archive is read: a change meanwhile shows
    with cache.no_collection():
        found = _from_stores(env, names, use_cache, made, scope)
    found.scoped = made.scoped = scope is not None
    name = names_tried[0] if use_cache else None
    if name:
        made.texts = {cwd: listing_text(cwd) for cwd in {s.cwd for s in found.sessions} if cwd}
    _keep(env, name, found, made)
    return found


ASIDE_SOURCES = 512  # sources noted, from which the index and snapshot are written beside the command


def _keep(env, name: str | None, found: "Catalog", made: snapshot.Made) -> None:
    """What the next discovery reads: the index, when it changed, and the snapshot `name`, when
    given. Big ones (a first run over thousands of sessions: half a second for 40,000) are
    written by a child while this process prints or searches (`parallel.aside`)."""
    def write() -> None:
        if made.index is not None:
            cache.save(env, cache.INDEX_FILE, made.index)
        if name:
            snapshot.save(env, name, found, made)

    if made.index is None and not name:
        return
    if len(made.native) >= ASIDE_SOURCES:
        from core import parallel

        parallel.aside(write)
    else:
        write()


def _warm(env, names: list, scope: "Scope | None" = None, checked: bool = True) -> Catalog | None:
    """The catalog of the first of the snapshots `names` that still holds, else None."""
    for name in names:
        kept = snapshot.load(env, name)
        found = _from_snapshot(kept, scope, checked) if kept else None
        if found is not None:
            return found
    return None


def _from_snapshot(kept: snapshot.Snapshot, scope: "Scope | None", checked: bool = True) -> Catalog | None:
    """The snapshot's catalog (of the project `scope`), None when one of its sources changed."""
    rows = kept.header["groups"]
    chosen = rows if scope is None else [row for row in rows if scope.holds(row[0])]
    found = Catalog([], versions=kept.header["agents"], snapshot=kept,
                    rest=[row for row in rows if row not in chosen] if scope else [])
    sessions = kept.sessions(chosen, found.native if checked else {}, checked=checked, stats=found.stats)
    if sessions is None:
        return None
    found.sessions = sessions
    found.scoped = bool(kept.header.get("scoped"))
    _texts.update(kept.header["texts"])
    return found


def _from_stores(env, names, use_cache: bool, made: snapshot.Made, scope: "Scope | None" = None,
                 pick=None) -> Catalog:
    """The sessions of the stores' sources (those `scope` cannot tell are outside the project;
    those `pick(pairs)` keeps of each store's (source, native files) pairs, when given). The
    stores are listed one after another, and the sources to scan of all of them scanned
    together (on every core, when they are many: a first run reads twenty stores); the stores
    kept inside projects come last, each on its own, since they are looked for in the projects
    of the sessions found before them."""
    index = cache.load_shared(env, cache.INDEX_FILE) if use_cache else {}
    found = _Found(made)
    made.avoided = avoided = mounts.avoided(env)
    stat_memo: dict = {}
    modules = _in_discovery_order(agents.modules(names))
    inside = [m for m in modules if getattr(m, "STORES_IN_PROJECTS", False)]
    first = [_Store(m, index, env, [], avoided, found.problems, scope, pick, stat_memo)
             for m in modules if m not in inside]
    results = iter(_scans([job for store in first for job in store.jobs()], env, scope))
    for store in first:
        found.add(store.scanned([next(results) for _ in store.changed], found.problems), env, scope, pick)
    for module in inside:
        store = _Store(module, index, env, found.sessions, avoided, found.problems, scope, pick, stat_memo)
        found.add(store.scanned(_scans(store.jobs(), env, scope), found.problems), env, scope, pick)
    if use_cache and _changed(index, found.fresh, names):
        made.index = {**index, **found.fresh}  # written by the caller (`_keep`)
    made.env["HOME"] = env.get("HOME")
    sessions = found.sessions
    assign_short_ids(sessions)
    sessions.sort(key=lambda s: (-(s.started or 0), s.agent, s.native_id))
    catalog = Catalog(sessions, found.problems, found.sources_seen, versions=made.agents)
    catalog.native = made.native
    catalog.stats = stat_memo
    return catalog


class _Store:
    """One store's part of a discovery: its listing (`_listing`), and each of the sources it
    reads, with what the index knew of it (`found`: (source, native files, sessions, index
    entry), sessions None for a source to scan, whose positions are `changed`)."""

    def __init__(self, module, index: dict, env, sessions: list, avoided: list, problems: list,
                 scope: "Scope | None", pick, stat_memo: dict):
        cached = index.get(module.NAME) or {}
        self.module = module
        self.entries = cached.get("sources", {}) if cached.get("version") == module_version(module) else {}
        self.listing = _listing(module, env, cached if self.entries else {}, sessions, avoided, problems)
        pairs = self.listing[-1] if scope is None else _maybe_inside(module, self.listing[-1], scope)
        if pick is not None:
            pairs = pick(pairs)
        self.found, self.changed = _known(pairs, self.entries, stat_memo, problems)

    def jobs(self) -> list:
        """`_scan_job`'s job of each source to scan: (agent, source, native files to stat, or
        None when they were)."""
        return [(self.module.NAME, source, deps if entry is None else None)
                for source, deps, _, entry in (self.found[i] for i in self.changed)]

    def scanned(self, results: list, problems: list) -> "_Store":
        """The store with the scans' results (`_scans`', one per source to scan) in `found`;
        a source its scan found gone, or neither a regular file nor a folder, left out."""
        gone = set()
        for i, (records, settled, failures, made_fp) in zip(self.changed, results):
            source, deps, _, fp = self.found[i]
            fp = fp if made_fp is None else made_fp
            if fp is None:
                gone.add(i)
                continue
            problems.extend(SourceProblem(*failure) for failure in failures)
            sessions = [Session.from_cache(values) for values in records or ()]
            self.found[i] = (source, deps, sessions, None if records is None else [fp, records, settled])
        if gone:
            self.found = [item for i, item in enumerate(self.found) if i not in gone]
        return self


class _Found:
    """What the stores' parts of a discovery add up to: the sessions (a session in two sources
    of a store once: the first wins), problems, sources read, the index's new entries, and what
    the snapshot keeps (`made`)."""

    def __init__(self, made: snapshot.Made):
        self.made = made
        self.sessions: list[Session] = []
        self.problems: list[SourceProblem] = []
        self.sources_seen: dict = {}
        self.fresh: dict = {}

    def add(self, store: _Store, env, scope: "Scope | None", pick) -> None:
        module, made = store.module, self.made
        per_project = getattr(module, "SESSIONS_PER_PROJECT", False)
        kept: dict = {}
        seen: set = set()
        self.sources_seen[module.NAME] = []
        for source, deps, found, entry in store.found:
            if entry is None:  # its first line says it ran elsewhere: neither listed nor indexed
                continue
            kept[source] = entry
            self.sources_seen[module.NAME].append(source)
            _note(made, entry, source, deps)
            for session in found:
                identity = (session.native_id, session.cwd if per_project else None)
                if identity not in seen:
                    seen.add(identity)
                    self.sessions.append(session)
        if pick is None:  # a pick is no store's whole listing: what it left out is not archived-only
            self.sessions.extend(_archived_only(module, env, seen, per_project))
        if scope is not None or pick is not None:  # the sources left out keep what the index knew of them
            kept = {**store.entries, **kept}
        self.fresh[module.NAME] = {"version": module_version(module), "sources": kept, "listing": store.listing}
        made.env.update(store.listing[1])
        made.witness = storefs.merged([made.witness, store.listing[0]])
        made.agents[module.NAME] = module_version(module)


def _listing(module, env, cached: dict, sessions: list, avoided: list, problems: list) -> list:
    """[witness state, environment read, inputs, avoided mounts, [(source, native files)...]]:
    the module's sources and what they depend on. The cached one while it holds: the folders
    and files it was made from, the variables it read, the project folders it was given (the
    stores kept inside projects) and the avoided mounts on its way are as they were."""
    inputs = _inputs(module, sessions)
    old = cached.get("listing")
    if old and old[2] == inputs and storefs.same_env(old[1], env) and \
            _same_avoided(old[0], old[3], avoided) and storefs.holds(old[0]):
        return old
    witness = storefs.Witness(ignored=(cache.cache_dir(env),))
    read = storefs.ReadEnv(env)
    with storefs.watching(witness):
        try:
            source_list = list(_sources(module, read, sessions))
        except OSError as exc:
            problems.append(SourceProblem(module.NAME, "", f"cannot list the store: {exc}"))
            witness.spoil()  # listed again next time, and the problem said again
            source_list = []
        outside: dict = {}  # folder -> whether it is outside every avoided mount
        names = {os.path.basename(p) for p in avoided}
        kept = [s for s in source_list if _outside(s, avoided, outside, names)]  # never read through
        pairs = list(zip(kept, _dependencies_of(module, kept, read)))           # a FUSE mount
    return [witness.state(), read.read, inputs, avoided, pairs]


def _outside(source: str, avoided: list, folders: dict, names: set) -> bool:
    """Whether a source is outside every avoided mount, asked once per folder (a source is a
    mount point itself only when one of them, whose `names` are given, names it)."""
    if not avoided:
        return True
    folder = os.path.dirname(source)
    if folder not in folders:
        folders[folder] = not mounts.inside(folder, avoided)
    return folders[folder] and not (os.path.basename(source) in names and mounts.inside(source, avoided))


def _dependencies_of(module, sources: list, env) -> list:
    """`dependencies` of each source; in one call for a module that lists them faster at once."""
    many = getattr(module, "dependencies_of", None)
    return many(sources, env) if many else [dependencies(module, source, env) for source in sources]


def _inputs(module, sessions: list) -> list | None:
    """What a store kept inside projects is looked for from: the sessions' folders so far."""
    if getattr(module, "STORES_IN_PROJECTS", False):
        return list(dict.fromkeys(s.cwd for s in sessions if s.cwd))
    return None


def _same_avoided(state: list, before: list, avoided: list) -> bool:
    """Whether the mounts discovery avoids are as they were where the listing looked."""
    if before == avoided:
        return True
    changed = set(before) ^ set(avoided)
    return not any(mounts.inside(path, changed) for path in storefs.paths(state))


def _maybe_inside(module, pairs: list, scope: "Scope") -> list:
    """The (source, native files) pairs whose path does not show that none of their sessions ran
    in the project (the module's `outside`, when it has one)."""
    outside = getattr(module, "outside", None)
    if outside is None:
        return pairs
    memo: dict = {}
    left_out = [_left_out(outside, pair[0], scope, memo) for pair in pairs]
    named = _session_named(module)
    names = {named(pair[0]) for pair, out in zip(pairs, left_out) if not out}
    # a transcript of the same session as one of the project's is read anyway: one conversation
    # resumed in two projects keeps a short id of its own in each (mark_twins), as every store's
    # discovery gives
    return [pair for pair, out in zip(pairs, left_out) if not out or named(pair[0]) in names]


def _left_out(outside, source: str, scope: "Scope", memo: dict) -> bool:
    """`outside(source, scope, memo)`; False (the source is read, and its scan says what is
    wrong) when the store's files make it fail: a hostile kimi.json must not stop a listing."""
    try:
        return outside(source, scope, memo)
    except Exception:
        return False


def _session_named(module):
    """What tells a module's transcripts of one session: the native id its file names give
    (`native_id_of`), else the file's name."""
    return getattr(module, "native_id_of", os.path.basename)


def _known(pairs: list, entries: dict, stat_memo: dict, problems: list) -> tuple[list, list]:
    """(source, native files, sessions, index entry [fingerprint, sessions, settled]) of each
    source that is a regular file or folder (a FIFO or a device would block or never end), in
    order, and the positions of those to scan again (sessions None): a source whose fingerprint
    changed, or one the index does not know, which its scan stat's (on every core, with the
    others). Settled: its scan read a head that appending leaves as it was, of a store that only
    appends to its files (`APPENDS_ONLY`), so that only replacing the file (its folder shows
    that) or rewriting it in place can change what it lists."""
    found, changed = [], []
    for source, deps in pairs:
        entry = entries.get(source)
        if not (isinstance(entry, list) and len(entry) == 3):  # unknown (or a damaged index's)
            changed.append(len(found))
            found.append((source, deps, None, None))
            continue
        fp = _fingerprint(source, deps, stat_memo)
        if fp is None:
            continue
        if entry[0] == fp:
            kept = [Session.from_cache(values) for values in entry[1]]
            problems.extend(SourceProblem(s.agent, source, s.extra["scan_error"])  # said again
                            for s in kept if "scan_error" in s.extra)
            found.append((source, deps, kept, entry))
        else:
            changed.append(len(found))
            found.append((source, deps, None, fp))
    return found, changed


def _fingerprint(source: str, deps: list, stat_memo: dict | None = None) -> list | None:
    """The fingerprint of a source's files; None when the source is gone or neither a regular
    file nor a folder."""
    found_stats = cache.stats(deps, stat_memo)
    own = found_stats[0] if deps and deps[0] == source else _stat(source)
    if own is None or not (stat.S_ISREG(own.st_mode) or stat.S_ISDIR(own.st_mode)):
        return None
    return cache.fingerprint_of(found_stats)


POOL_SCANS = 256  # sources to scan again for which more processes may pay (a first run, a big change)
POOL_PROBE = 16  # sources scanned here first, to see what the rest would cost
FORK_PAYS = 0.02  # seconds of scanning left for which forking processes pays
SCAN_BATCH = 64  # sources scanned together: their sessions' listing texts are redacted at once


def _scans(jobs: list, env, scope: "Scope | None" = None) -> list:
    """`_scan_job` of each job, SCAN_BATCH at a time (`_scan_batch`): when many sources would
    take long here, most of them on every core (`parallel.forked`, which keeps them here beside
    a server's threads). Scans cost from a few hundredths of a millisecond (a Claude
    transcript's head) to tens (a database store's one source holds every session):
    POOL_PROBE of them, taken across the stores' jobs, say what the rest would cost."""
    if len(jobs) < POOL_SCANS:
        return _scan_batch(jobs, env, scope)
    started = time.perf_counter()
    step = len(jobs) // POOL_PROBE
    probed = range(0, step * POOL_PROBE, step)
    done = dict(zip(probed, _scan_batch([jobs[i] for i in probed], env, scope)))
    rest = [i for i in range(len(jobs)) if i not in done]
    batches = [rest[n:n + SCAN_BATCH] for n in range(0, len(rest), SCAN_BATCH)]
    if (time.perf_counter() - started) / POOL_PROBE * len(rest) < FORK_PAYS:
        results = [_scan_batch([jobs[i] for i in batch], env, scope) for batch in batches]
    else:
        from core import parallel

        results = parallel.forked(_scan_batch, [[jobs[i] for i in batch] for batch in batches], (env, scope))
    for batch, found in zip(batches, results):
        done.update(zip(batch, found))
    return [done[i] for i in range(len(jobs))]


def _scan_batch(jobs: list, env, scope: "Scope | None" = None) -> list:
    """`_scan_job` of each job, their sessions' listing texts found clean by one search
    (`redact.clean_among`) rather than one per session."""
    from redaction.redact import clean_among  # here: a warm listing has its texts from the snapshot

    scanned = [_scan_job(job, env, scope) for job in jobs]
    clean = clean_among([text for sessions, *_ in scanned for session in sessions or ()
                         for text in listing_texts(session)])
    return [(None if sessions is None else [untrusted(s, clean).to_cache() for s in sessions], *rest)
            for sessions, *rest in scanned]


def _scan_job(job: tuple, env, scope: "Scope | None" = None) -> tuple:
    """(the sessions as scanned, settled, problems as tuples, fingerprint) of one source's scan;
    sessions None, unscanned, when a project is given (`scope`) and the module's `cwd_of` reads
    in the source's first line that its session ran elsewhere. The job is (agent, source,
    native files): their fingerprint is made first, when they are given (None, and nothing
    scanned, for a source that is gone or no regular file or folder), else left to the caller."""
    agent, source, deps = job
    fp = None
    if deps is not None:
        fp = _fingerprint(source, deps)
        if fp is None:
            return None, True, [], None
    module = agents.load(agent)
    cwd_of = getattr(module, "cwd_of", None) if scope else None
    if cwd_of is not None:
        cwd = cwd_of(source)
        if cwd is not None and not scope.holds(cwd):
            return None, True, [], fp
    problems: list = []
    reading.open_ended = False
    found = _scan(module, source, env, problems)
    settled = getattr(module, "APPENDS_ONLY", False) and not reading.open_ended
    return found, settled, [(p.agent, p.source, p.reason) for p in problems], fp


def _note(made: snapshot.Made, entry: list, source: str, deps: list) -> None:
    """What the snapshot keeps of a source: [native files, the source's mtime in seconds, their
    fingerprint, settled], and the fingerprints of the files of one that is not settled, which
    every warm discovery checks (a settled one is checked when its sessions are read)."""
    fp, _, settled = entry
    made.native[source] = [deps, fp[0][1] / 1e9 if fp and fp[0] else None, fp, settled]
    if not settled:
        made.volatile.update(zip(deps, fp))


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
    """The module's scan (sessions as the store has them: `untrusted` makes them safe), or,
    when the source cannot be read at all, one placeholder session so that the failure stays
    visible in listings, the mount and the health report."""
    try:
        return module.scan(source, env)
    except Exception as exc:  # a broken source must not hide the others
        reason = f"{type(exc).__name__}: {exc}"
        problems.append(SourceProblem(module.NAME, source, reason))
        try:
            started = os.stat(source).st_mtime
        except OSError:
            started = None
        return [Session(agent=module.NAME, native_id=os.path.basename(source), source=source,
                        started=started, title="(unreadable session)", extra={"scan_error": reason})]


def listing_texts(session: Session) -> list:
    """The texts of a scanned session that `untrusted` makes listing texts of (those it may)."""
    extra = session.extra if isinstance(session.extra, dict) else {}
    return [session.native_id, session.title, session.model, extra.get("native_title"), extra.get("task")]


def untrusted(session: Session, clean: set = frozenset()) -> Session:
    """A scanned session made safe to keep, compare and print: every field comes from the store.
    A working directory no system call takes (a NUL in it, not a string) is dropped, so the
    session belongs to no project, and the document says why (`extra.discovery_warnings`,
    counted by `trajectoriz agents`); first message and model are plain valid text, secrets
    redacted (the index cache stores them, listings print them, and a search never matches
    inside a secret). Paths and ids stay as they are: they name files to open. `clean`: texts
    known to hold no secret (`redact.clean_among`)."""
    warnings = []
    if session.cwd is not None and not (isinstance(session.cwd, str) and "\0" not in session.cwd):
        warnings.append(f"the recorded working directory is not a usable path "
                        f"({printable(repr(session.cwd))[:200]}): the session belongs to no project")
        session.cwd = None
    elif type(session.cwd) is str:
        session.cwd = sys.intern(session.cwd)  # thousands of sessions share a few: kept and written once
    if not isinstance(session.native_id, str):
        session.native_id = str(session.native_id)
    with markers_of(session):
        redacted_id = listing_text(session.native_id, clean)
        if redacted_id != session.native_id:  # an id holding a secret: matched and printed redacted
            session.extra = {**session.extra, "shown_id": redacted_id}
        titled(session, clean)
        session.model = listing_text(session.model, clean) if isinstance(session.model, str) else None
    if warnings:
        session.extra = {**session.extra, "discovery_warnings": warnings}
    return session


def titled(session: Session, clean: set = frozenset()) -> None:
    """The session's title (titles.py) from what its scan found: the agent's own title
    (`extra.native_title`), the first request carrying a task (`extra.task`, when not the first
    message) and the first message (`title`), which stays in `extra.first_message` when the
    title is another text. Listing texts: redacted, cut."""
    extra = session.extra
    first = session.title if isinstance(session.title, str) else ""
    title = titles.title_of(extra.get("native_title"), [first, extra.get("task")])
    session.title = listing_title(title, clean=clean)
    if "native_title" in extra or "task" in extra or title != first:
        session.extra = {k: v for k, v in extra.items() if k not in ("native_title", "task")}
        if title != first:
            session.extra["first_message"] = listing_title(first, clean=clean)


def title(session: Session, facts: dict | None = None) -> str:
    """What a session was about: the title its document gave (`documents.totals`) when its
    facts are known, else the one its scan found."""
    found = facts.get("title") if facts else None
    return printable(found) if isinstance(found, str) and found else session.title


def first_message(session: Session) -> str:
    """The session's first message as the user wrote it (listing text), which its title may not be."""
    return session.extra.get("first_message", session.title)


def markers_of(session: Session):
    """Redaction's markers for what is shown of `session`, its listing and its document alike
    (redact.markers_of)."""
    from redaction import redact  # here: a warm listing has its texts from the snapshot

    return redact.markers_of(f"{session.agent}:{session.native_id}")


_texts: dict = {}  # text -> listing text: known from the snapshot (see discovery/snapshot.py), or made
                  # here (models and folders repeat across thousands of sessions)


def listing_text(text: str, clean: set = frozenset()) -> str:
    """The text printable and redacted (`clean`: texts known to hold no secret). A text that
    held a secret is not kept in `_texts`: its markers are those of the session it is redacted
    for (redact.markers_of)."""
    known = _texts.get(text)
    if known is None:
        from redaction.redact import redact_text  # here: a warm listing has its texts from the snapshot

        redacted, found = (text, None) if text in clean else redact_text(text)
        known = printable(redacted)
        if len(text) <= 256 and not found:
            if len(_texts) > 4096:
                _texts.clear()
            _texts[text] = known
    return known


def listing_title(text: str, limit: int = TITLE_CHARACTERS, clean: set = frozenset()) -> str:
    """A first message as `agents.base.one_line` gives it, redacted, then cut at `limit`."""
    title = listing_text(text, clean)
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
    return identity_hash(identity)


def identity_hash(identity: str) -> str:
    return sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


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
    16, ... hex digits) for exactly the sessions whose shorter ids would collide with another
    of the same agent (the prefix tells agents apart: another agent's sessions never change
    an id)."""
    mark_twins(sessions)
    prefixes = {name: getattr(agents.load(name), "PREFIX", name[:2]) for name in
                {s.agent for s in sessions}}
    digests = [full_hash(s) for s in sessions]
    taken: dict = {}
    for session, digest in zip(sessions, digests):
        key = (session.agent, digest[:SHORT_HEX])
        taken[key] = taken.get(key, 0) + 1
    for session, digest in zip(sessions, digests):
        width = SHORT_HEX
        if taken[(session.agent, digest[:width])] > 1:  # rare: widen until no other session shares it
            rivals = [d for other, d in zip(sessions, digests)
                      if other.agent == session.agent and d != digest and d[:width] == digest[:width]]
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
    if session.started is None:
        return "unknown"
    try:
        quarter = int(session.started // 900)  # no time zone of today starts a day within a quarter hour
    except (OverflowError, ValueError, TypeError):
        quarter = None
    found = _dates.get(quarter)
    if found is None:
        moment = local_time(session)
        found = "unknown" if moment is None else moment.strftime("%Y-%m-%d")
        if quarter is not None:
            _dates[quarter] = found
    return found


_dates: dict = {}  # quarter hours since the epoch -> the local date (a listing repeats days)


def file_name(session: Session) -> str:
    moment = local_time(session)
    date = moment.strftime("%Y-%m-%d") if moment is not None else "0000-00-00"
    return f"{date}_{session.agent}_{session.short_id}.atif.json"


def discover_for(env, ident: str) -> Catalog:
    """A catalog that holds the session `ident` names, if any does: the warm snapshot of every
    store; else, for a short id or a file name, which name their agent, the transcripts of that
    agent whose file names give an id of that hash (`native_id_of`), then that agent's store
    alone (a first `show` reads one transcript, or one store, not all of them); else every
    store."""
    found = _warm(env, [snapshot.key(env, None)])
    if found is not None:
        with_pulled(env, found, None)
        return found
    short = _short_id_in(ident)
    agent = _agent_named_by(short) if short else None
    if agent is not None:
        for attempt in (lambda: _named(env, agent, short[1]), lambda: discover(env, [agent])):
            found = attempt()
            try:
                if found is not None:
                    find(found, ident)
                    return found
            except UserError:
                pass  # not there (or ambiguous there): a wider discovery says which
    return discover(env)


def _short_id_in(ident: str) -> tuple[str, str] | None:
    """(prefix, hex digits) of a short id, or of the one in a mount file name."""
    ident = os.path.basename(ident.strip())
    if ident.endswith(".atif.json"):
        ident = ident[: -len(".atif.json")].rsplit("_", 1)[-1]
    prefix, dash, rest = ident.partition("-")
    if not dash or not rest or any(c not in "0123456789abcdef" for c in rest.lower()):
        return None
    return prefix, rest.lower()


def _agent_named_by(short: tuple[str, str]) -> str | None:
    """The agent a short id's prefix names; None for one whose store is found through the
    others' sessions (kept inside projects)."""
    name = agents.named_by_prefix(short[0])
    if name is None or getattr(agents.load(name), "STORES_IN_PROJECTS", False):
        return None
    return name


def _named(env, agent: str, digits: str) -> Catalog | None:
    """The sessions of `agent`'s transcripts whose file names give a native id (the module's
    `native_id_of`) whose hash starts with the first SHORT_HEX of `digits`: every session that
    could share the id, so that each gets the id a discovery of the whole store gives it, the
    transcripts of one session in two folders among them (`mark_twins`). None for an agent
    whose file names give no ids. No snapshot is kept of it, and no archived session joins it:
    it is no store's whole listing (`discover_for` then asks the agent's whole store, archive
    included)."""
    module = agents.load(agent)
    id_of = getattr(module, "native_id_of", None)
    if id_of is None:
        return None

    def named(pairs: list) -> list:
        names = set()
        for source, _ in pairs:
            native_id = id_of(source)
            if native_id is not None and identity_hash(f"{agent}:{native_id}").startswith(digits[:SHORT_HEX]):
                names.add(native_id)
        return [pair for pair in pairs if id_of(pair[0]) in names]

    made = snapshot.Made()
    with cache.no_collection():
        found = _from_stores(env, [agent], True, made, pick=named)
    _keep(env, None, found, made)
    with_pulled(env, found, None, [agent])  # (a session here and pulled: which one, as everywhere)
    return found


def find(catalog: Catalog, ident: str) -> Session:
    """A session by short id (or a longer prefix of its hash, with or without the agent's
    prefix: `cl-cf7afd41`, `cf7afd41`), mount file name, or native id (or a unique prefix of
    it)."""
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
        if all(c in "0123456789abcdef" for c in ident.lower()):  # a short id without its agent's prefix
            named = {id(s) for s in matches}
            matches += [s for s in catalog.sessions if id(s) not in named and full_hash(s).startswith(ident.lower())]
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
        return self.holds(session.cwd)

    def holds(self, cwd) -> bool:
        """Whether a working directory is the project or inside it."""
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


def chosen_project(args) -> str:
    """`--dir P` as given, else the current project: the git work tree around the current
    directory, or the directory itself."""
    directory = getattr(args, "dir", None)
    if directory:
        if not os.path.isdir(directory):
            raise UserError(f"--dir {directory}: no such directory")
        return os.path.realpath(directory)
    return project_root(os.getcwd())


def empty_hint(found: Catalog, project: str | None, env) -> str:
    """What to try when a listing is empty: where the sessions are, or that no store was found."""
    every_store = discover(looking_in(env, project)) if found.scoped else found
    everything = every_store.everything()  # (a project's first discovery left the others out)
    if not everything:
        home = env.get("HOME", "~")
        return (f"No agent's sessions were found under {home}: `trajectoriz agents` says where each "
                f"agent keeps them (and the variables that move them).")
    elsewhere = len(everything)
    unplaced = sum(1 for s in everything if not s.cwd)
    note = f" ({unplaced} of them recorded no working directory, so they are in no project)" if unplaced else ""
    return (f"None of the {elsewhere} session(s) found ran in {project}{note}: "
            f"`trajectoriz list --all` lists them all, with their projects.")
