"""Which sessions their own agent will delete, and when, as the agent's own settings say.

Some agents delete old sessions; trajectoriz keeps a copy of every session it has seen
(`discovery/archive.py`). This module tells each agent's policy (`trajectoriz agents`) and how many
sessions not yet archived their agent will delete within a week (`memory`, `list`). It reads the
agents' settings files and stats their session files; it never writes to either, and a settings
file it cannot use (missing, not a regular file, too large, not JSON, not an object, a value of
the wrong type) is read as the agent reads it: as if that file or value were not there.

- Claude Code deletes a transcript (`projects/<folder>/<session>.jsonl`) whose modification time
  is older than `cleanupPeriodDays` days (default 30), at startup and about daily after. The
  value is the first usable one of: managed (`/etc/claude-code/managed-settings.json`), local
  (`<project>/.claude/settings.local.json`), project (`<project>/.claude/settings.json`), user
  (`${CLAUDE_CONFIG_DIR:-~/.claude}/settings.json`), where the project is the directory Claude
  Code runs in. Usable means a whole number of days, at least 1 (0 has been rejected since
  2.1.89). The sweep walks every project folder whichever project it runs in, so the shortest
  period of any project Claude Code ran in applies to every transcript.
- Gemini CLI, when it starts in a project, deletes that project's chats as
  `general.sessionRetention` says: `enabled` (default true), `maxAge` (default "30d"; a number
  and a unit h, d, w or m, a month being 30 days), `maxCount` (keep that many of the most
  recently updated), `minRetention` (default "1d": a `maxAge` shorter than it turns the cleanup
  off, as does any value it rejects). Each key comes from the last of system defaults
  (`/etc/gemini-cli/system-defaults.json`), user (`${GEMINI_CLI_HOME:-~}/.gemini/settings.json`),
  workspace (`<project>/.gemini/settings.json`) and system (`/etc/gemini-cli/settings.json`)
  that sets it (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH` and `GEMINI_CLI_SYSTEM_SETTINGS_PATH` move the
  system files). The files may hold comments. Only `chats/session-*.json[l]` are concerned.
- Qwen Code keeps its chats: its `general.cleanupPeriodDays` (default 30; 0 or less means one
  hour) sweeps only file-history backups and per-project sub-agent transcripts, which
  trajectoriz does not read.
- Every other agent keeps its sessions until the user deletes them.

A session's last activity is its own file's modification time (`Session.source`), the date both
sweeps compare: a Claude sub-agent transcript that is newer does not save its parent, and the
other files Gemini sessions depend on (`projects.json`) are shared by every project.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections import namedtuple

from agents.base import as_dict, home, open_binary
from atif.serialize import loads
from core import cache, compiledre, mounts, safepath
from discovery.catalog import Catalog, listing_text

WINDOW_DAYS = 7
DAY = 86400
MAX_SETTINGS_BYTES = 1024 * 1024
KEEPS = "keeps everything"

CLAUDE_MANAGED = "/etc/claude-code/managed-settings.json"
CLAUDE_DEFAULT_DAYS = 30
MAX_DAYS = 10 ** 7                 # longer is forever; keeps the arithmetic in float range

GEMINI_SYSTEM = "/etc/gemini-cli/settings.json"
GEMINI_DEFAULTS = {"enabled": True, "maxAge": "30d", "minRetention": "1d"}
GEMINI_KEYS = ("enabled", "maxAge", "maxCount", "minRetention")
GEMINI_UNITS = {"h": 3600, "d": DAY, "w": 7 * DAY, "m": 30 * DAY}
_GEMINI_PERIOD = compiledre.compile(r"([0-9]+)([hdwm])")
_GEMINI_SESSION_FILE = compiledre.compile(r"session-.*\.jsonl?")

QWEN_DEFAULT_DAYS = 30
QWEN_MINIMUM = "1 hour"

_JSONC = compiledre.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)


# settings files ------------------------------------------------------------------------------------
def strip_comments(text: str) -> str:
    """JSON with `//` and `/* */` comments (outside strings) made JSON."""
    return _JSONC.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text)


class SettingsFiles:
    """Settings files as JSON objects, each read at most once per run; {} for a file that cannot
    be used. A path through a FUSE mount discovery avoids (`mounts.avoided`) is never looked at:
    a project's directory comes from a store."""

    def __init__(self, env):
        self._avoided = mounts.avoided(env)
        self._read: dict = {}
        self._links: dict = {}  # the projects' settings files share most of their folders

    def get(self, path: str, comments: bool = False) -> dict:
        if path not in self._read:
            self._read[path] = self._load(path, comments)
        return self._read[path]

    def _load(self, path: str, comments: bool) -> dict:
        resolved = safepath.resolve(path, self._avoided, self._links)
        if resolved is None or mounts.inside(resolved, self._avoided):
            return {}
        try:
            with open_binary(resolved) as handle:
                data = handle.read(MAX_SETTINGS_BYTES + 1)
            if len(data) > MAX_SETTINGS_BYTES:
                return {}
            value = loads(strip_comments(data.decode("utf-8")) if comments else data)
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}


def tilde(path: str, env) -> str:
    """`path` with the home directory written `~`."""
    base = home(env).rstrip(os.sep)
    return "~" + path[len(base):] if base and path.startswith(base + os.sep) else path


def last_activity(session) -> float | None:
    try:
        return os.stat(session.source).st_mtime
    except (OSError, ValueError):
        return None


def _before(modified: float | None, cutoff: float) -> bool:
    return modified is not None and modified < cutoff


def days_text(days: float) -> str:
    return f"{days:g} day{'' if days == 1 else 's'}"


def projects_of(folders) -> list[str]:
    return sorted(cwd for cwd in folders if safepath.usable(cwd))


# Claude Code ---------------------------------------------------------------------------------------
class ClaudePeriod(namedtuple("ClaudePeriod", "days source scope")):
    """How many days Claude Code keeps sessions; `source`: the settings file it comes from (None
    for the default); `scope`: managed, local, project, user or default."""
    __slots__ = ()


def claude_days(value) -> int | None:
    """A `cleanupPeriodDays` Claude Code accepts: a whole number of days, at least 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return min(int(value), MAX_DAYS) if value >= 1 else None


def claude_files(project: str | None, env) -> list[tuple[str, str]]:
    """(scope, path) of Claude Code's settings files, highest precedence first."""
    user_dir = env.get("CLAUDE_CONFIG_DIR") or os.path.join(home(env), ".claude")
    files = [("managed", CLAUDE_MANAGED)]
    if project:
        files += [("local", os.path.join(project, ".claude", "settings.local.json")),
                  ("project", os.path.join(project, ".claude", "settings.json"))]
    return files + [("user", os.path.join(user_dir, "settings.json"))]


# Gemini CLI ----------------------------------------------------------------------------------------
class GeminiRule(namedtuple("GeminiRule", "max_age max_age_text max_count off_because sources",
                             defaults=(None, "", None, "", ()))):
    """What Gemini CLI deletes: chats older than `max_age` seconds or beyond the `max_count`
    newest; `off_because`: why nothing is deleted, when nothing is."""
    __slots__ = ()

    @property
    def limits(self) -> tuple:
        return self.max_age, self.max_count

    def deletes(self, rank: int, modified: float, horizon: float) -> bool:
        """Whether the chat `rank` places among its project's (0 = the newest) goes by `horizon`."""
        too_many = self.max_count is not None and rank >= self.max_count
        return too_many or (self.max_age is not None and modified < horizon - self.max_age)


def gemini_files(project: str | None, env) -> list[str]:
    """Gemini CLI's settings files, lowest precedence first."""
    system = env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or GEMINI_SYSTEM
    defaults = env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or os.path.join(
        os.path.dirname(system), "system-defaults.json")
    from agents.gemini import gemini_dir  # here: a listing without Gemini sessions never asks

    files = [defaults, os.path.join(gemini_dir(env), "settings.json")]
    if project:
        files.append(os.path.join(project, ".gemini", "settings.json"))
    return files + [system]


def gemini_seconds(value) -> int | None:
    """A period as Gemini CLI takes it ("24h", "30d", "4w", "1m"), in seconds; None for what
    it rejects (zero included)."""
    match = _GEMINI_PERIOD.fullmatch(value) if isinstance(value, str) else None
    digits = match.group(1).lstrip("0") if match else ""
    if not digits:
        return None
    count = int(digits) if len(digits) <= 18 else 10 ** 18  # beyond, it never comes
    return count * GEMINI_UNITS[match.group(2)]


def js_truthy(value) -> bool:
    """Truthiness as JavaScript has it for JSON values (an empty array or object is true)."""
    return isinstance(value, (list, dict)) or bool(value)


def gemini_count(value) -> int | float | None:
    """`maxCount` as the cleanup compares it: a number (true counts 1); None for no limit."""
    if not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
        return None
    return math.ceil(value) if math.isfinite(value) else None


def gemini_rule(settings: dict, sources: tuple) -> GeminiRule:
    """What Gemini CLI's session cleanup does with these merged `sessionRetention` settings."""
    if not js_truthy(settings.get("enabled")):
        return GeminiRule(off_because="enabled is false", sources=sources)
    max_age_text, max_age = settings.get("maxAge"), None
    if js_truthy(max_age_text):
        max_age = gemini_seconds(max_age_text)
        if max_age is None:
            return GeminiRule(off_because=f"maxAge {repr(max_age_text)[:40]} is rejected",
                              sources=sources)
        minimum = gemini_seconds(settings.get("minRetention")) or gemini_seconds("1d")
        if max_age < minimum:
            return GeminiRule(off_because="maxAge is shorter than minRetention", sources=sources)
    count = gemini_count(settings.get("maxCount"))
    if count is not None and count < 1:
        return GeminiRule(off_because="maxCount is below 1", sources=sources)
    if max_age is None and count is None:
        return GeminiRule(off_because="neither maxAge nor maxCount is set", sources=sources)
    return GeminiRule(max_age, str(max_age_text) if max_age else "", count, "", sources)


def is_gemini_chat(session) -> bool:
    """A chat file the cleanup looks at: `chats/session-*.json[l]` (not a sub-agent's, in a
    folder of its own, nor a prompt log)."""
    folder, name = os.path.split(session.source)
    return os.path.basename(folder) == "chats" and bool(_GEMINI_SESSION_FILE.fullmatch(name))


# Qwen Code -----------------------------------------------------------------------------------------
def qwen_period_text(value) -> str | None:
    """How long Qwen Code keeps its backups for a `cleanupPeriodDays`; None when unset."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return QWEN_MINIMUM   # zero, negative or not a number: its one-hour minimum
    return days_text(min(value, MAX_DAYS))


def qwen_files(project: str | None, env) -> list[str]:
    """Qwen Code's settings files, highest precedence first."""
    from agents.qwen import qwen_dir

    user = os.path.join(qwen_dir(env), "settings.json")
    return ([os.path.join(project, ".qwen", "settings.json")] if project else []) + [user]


# the policies --------------------------------------------------------------------------------------
class Retention:
    """Every agent's retention rules for a set of sessions (the catalog's), each settings file
    read once, and a project's files only for an agent that has sessions in it."""

    def __init__(self, sessions, env):
        """`sessions`: a list, or a catalog.Catalog, whose sessions left out by a project's
        discovery are decoded only as far as the rules need them."""
        self.env = env
        self.files = SettingsFiles(env)
        self.found = sessions if isinstance(sessions, Catalog) else Catalog(list(sessions))
        self._gemini: dict = {}

    def sessions_of(self, agent: str, modified_before: float | None = None) -> list:
        """The agent's sessions; with `modified_before`, those last seen modified earlier only
        (a session cannot have been modified earlier than it was last seen modified)."""
        found = [s for s in self.found.sessions if s.agent == agent] + self.found.of_agent(agent, modified_before)
        if modified_before is None:
            return found
        seen = self.found.native
        return [s for s in found if (seen.get(s.source) or (None, None))[1] is None
                or seen[s.source][1] < modified_before]

    # Claude Code
    def claude_period(self, project: str | None) -> ClaudePeriod:
        for scope, path in claude_files(project, self.env):
            days = claude_days(self.files.get(path).get("cleanupPeriodDays"))
            if days is not None:
                return ClaudePeriod(days, path, scope)
        return ClaudePeriod(CLAUDE_DEFAULT_DAYS, None, "default")

    def claude_shortest(self) -> ClaudePeriod:
        """The period of the project whose sweep deletes the most: it deletes in every project."""
        projects = [None, *projects_of(self.found.folders_of("claude"))]
        return min((self.claude_period(p) for p in projects), key=lambda period: period.days)

    def claude_policy(self) -> str:
        period = self.claude_shortest()
        where = tilde(period.source, self.env) if period.source else "default"
        text = f"deletes transcripts after {days_text(period.days)} ({where})"
        return text + ("; its sweep covers every project" if period.scope in ("local", "project") else "")

    def claude_doomed(self, horizon: float) -> list:
        cutoff = horizon - self.claude_shortest().days * DAY
        return [s for s in self.sessions_of("claude", cutoff) if _before(last_activity(s), cutoff)]

    # Gemini CLI
    def gemini_rule(self, project: str | None) -> GeminiRule:
        if project not in self._gemini:
            merged, sources = dict(GEMINI_DEFAULTS), []
            for path in gemini_files(project, self.env):
                general = as_dict(self.files.get(path, comments=True).get("general"))
                given = {key: value for key, value in as_dict(general.get("sessionRetention")).items()
                         if key in GEMINI_KEYS and value is not None}
                if given:
                    merged.update(given)
                    sources.append(path)
            self._gemini[project] = gemini_rule(merged, tuple(sources))
        return self._gemini[project]

    def gemini_policy(self) -> str:
        rule = self.gemini_rule(None)
        where = ", ".join(tilde(path, self.env) for path in rule.sources) or "default"
        if rule.off_because:
            text = f"{KEEPS} (its cleanup is off: {rule.off_because}; {where})"
        else:
            parts = [f"deletes chats after {rule.max_age_text}"] if rule.max_age else []
            if rule.max_count is not None:
                parts.append(f"keeps the {rule.max_count} newest per project")
            text = f"{', '.join(parts)} ({where})"
        return text + self._projects_differing("gemini", self.gemini_rule, rule.limits, lambda r: r.limits)

    def gemini_doomed(self, horizon: float) -> list:
        folders: dict = {}
        for session in filter(is_gemini_chat, self.sessions_of("gemini")):
            modified = last_activity(session)
            if modified is not None:
                folders.setdefault(os.path.dirname(session.source), []).append((modified, session))
        doomed = []
        for chats in folders.values():
            chats.sort(key=lambda pair: -pair[0])
            doomed += [session for rank, (modified, session) in enumerate(chats)
                       if self.gemini_rule(session.cwd).deletes(rank, modified, horizon)]
        return doomed

    # Qwen Code
    def qwen_period(self, project: str | None) -> tuple[str, str | None]:
        for path in qwen_files(project, self.env):
            general = as_dict(self.files.get(path, comments=True).get("general"))
            text = qwen_period_text(general.get("cleanupPeriodDays"))
            if text:
                return text, path
        return days_text(QWEN_DEFAULT_DAYS), None

    def qwen_policy(self) -> str:
        period, source = self.qwen_period(None)
        where = tilde(source, self.env) if source else "default"
        text = (f"keeps its chats; deletes only file-history backups and sub-agent transcripts, "
                f"after {period} ({where})")
        return text + self._projects_differing("qwen", self.qwen_period, period, lambda p: p[0])

    def _projects_differing(self, agent: str, rule_of, usual, limits) -> str:
        count = sum(1 for p in projects_of(self.found.folders_of(agent)) if limits(rule_of(p)) != usual)
        return f"; {count} project(s) set their own" if count else ""

    # every agent
    def policy(self, agent: str) -> str:
        describe = {"claude": self.claude_policy, "gemini": self.gemini_policy,
                    "qwen": self.qwen_policy}.get(agent)
        return describe() if describe else KEEPS

    def doomed(self, horizon: float) -> list:
        """The sessions their agent will have deleted by `horizon` (epoch seconds)."""
        return self.claude_doomed(horizon) + self.gemini_doomed(horizon)


def policies(sessions, env) -> dict[str, str]:
    """Every known agent's retention policy, one line each, for `trajectoriz agents` (printable
    and redacted: a project's path comes from a store)."""
    rules = Retention(sessions, env)
    import agents

    return {name: listing_text(rules.policy(name)) for name in agents.names()}


def at_risk(sessions, archived, env, days: int = WINDOW_DAYS, now: float | None = None) -> dict[str, int]:
    """How many of `sessions` (give the whole catalog: one project's Claude settings decide for
    every project) each agent will delete within `days` days that `archived(session)` says are
    not archived; agents with none are left out."""
    horizon = (time.time() if now is None else now) + days * DAY
    counts: dict = {}
    for session in Retention(sessions, env).doomed(horizon):
        if not archived(session):
            counts[session.agent] = counts.get(session.agent, 0) + 1
    return counts


def warning(counts: dict[str, int], days: int = WINDOW_DAYS) -> str | None:
    """The one line `memory` and `list` print when sessions are about to be lost; None when none are."""
    total = sum(counts.values())
    if not total:
        return None
    detail = ", ".join(f"{agent} {count}" for agent, count in sorted(counts.items()))
    return (f"{total} session(s) not archived yet will be deleted by their agent within {days} days "
            f"({detail}): run `trajectoriz archive`")


def warn_at_risk(found: Catalog, env) -> None:
    """One line on stderr when agents will delete, within a week, sessions not archived yet."""
    line = warning(decided_at_risk(found, env))
    if line:
        print(f"trajectoriz: {line}", file=sys.stderr)


NOTE = cache.named("retention-v1", python=True, ext=".bin")  # the last decision of `decided_at_risk`
DECIDED_FOR = DAY


def decided_at_risk(found: Catalog, env, now: float | None = None) -> dict[str, int]:
    """`at_risk` of the whole catalog, decided at most once a day: deciding stats and keys every
    session of the machine not yet archived (30,000 for a heavy user: most of a warm listing's
    time), for one line about sessions a week away from deletion. The decision is kept
    (`NOTE`) and made again after a day, or as soon as the archive (`archive`, `forget`, a
    mount's archiving) or a user's or system settings file changes (a project's own settings
    count from the next day's decision). Only a catalog of every project's sessions decides
    for the day (`list --all`, or a project's discovery from a snapshot of every store); one
    of a project's sources alone says what it can."""
    from discovery import archive

    now = time.time() if now is None else now
    kept = cache.load(env, NOTE)
    if _still_decided(kept, env, now):
        return dict(kept["counts"])
    archived = _file_state(archive.index_path(env))
    settings = _machine_settings(env)
    counts = at_risk(found, archive.holds(env), env, now=now)
    if not found.scoped:  # a project's first discovery knows its own sessions only: not kept
        cache.save(env, NOTE, {"decided": now, "archive": archived, "settings": settings, "counts": counts})
    return counts


def _still_decided(kept: dict, env, now: float) -> bool:
    from discovery import archive

    try:
        return (0 <= now - kept["decided"] < DECIDED_FOR
                and kept["archive"] == _file_state(archive.index_path(env))
                and kept["settings"] == _machine_settings(env)
                and all(isinstance(n, int) for n in kept["counts"].values()))
    except (KeyError, TypeError, ValueError, AttributeError):
        return False


def _machine_settings(env) -> list:
    """[path, state] of the settings files of the agents that delete, outside any project: the
    user's and the system's (where the variables put them)."""
    gemini_user = os.path.join(env.get("GEMINI_CLI_HOME") or home(env), ".gemini", "settings.json")
    system = env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or GEMINI_SYSTEM
    defaults = env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or os.path.join(os.path.dirname(system),
                                                                          "system-defaults.json")
    paths = [path for _, path in claude_files(None, env)] + [gemini_user, system, defaults]
    return [[path, _file_state(path)] for path in paths]


def _file_state(path: str) -> list | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]
