"""Where to look for stores that live inside projects rather than under $HOME (Aider's
`.aider.chat.history.md`, Crush's `.crush/crush.db`).

Such a store can only be found by knowing the project. Walking the disk is not cheap, so
discovery looks at two places only:
- the directory trajectoriz runs in (`$PWD`, else the process's current directory) and every
  directory above it, which is where the agent itself would look;
- the working directories of the sessions of other agents: those the running discovery found
  (it lists these stores last and hands them over) and those in trajectoriz's own index cache.
  So a project used with Claude or Codex and with Aider is found from anywhere, on the first
  run; a project only ever used with Aider is found once trajectoriz is run inside it.
"""

from __future__ import annotations

import os

from agents.base import Session
from core import cache, mounts, safepath


def current_directory(env, avoided=()) -> str | None:
    """The directory the command runs in: `$PWD` when it names this directory, else getcwd()."""
    pwd = env.get("PWD")
    if safepath.usable(pwd) and safepath.is_dir(pwd, avoided):
        return pwd
    try:
        return os.getcwd()
    except OSError:
        return None


def ancestors(directory: str) -> list[str]:
    """`directory` and each directory above it, nearest first."""
    found = []
    current = os.path.abspath(directory)
    while True:
        found.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            return found
        current = parent


def known_session_dirs(env, avoided=(), session_dirs=()) -> list[str]:
    """Working directories of sessions of any agent: `session_dirs` (what the running discovery
    found) and those in trajectoriz's index cache (what the previous one found), existing ones
    only, symlinks resolved, each once. None is looked at inside an avoided FUSE mount, even
    through a symlink (`safepath`): a recorded directory is untrusted."""
    index = cache.load_shared(env, cache.INDEX_FILE)
    memo = _index_cwds.get(id(index))
    if memo is None or memo[0] is not index:
        memo = (index, _cwds_of(index))
        _index_cwds.clear()  # one index at a time: bounded
        _index_cwds[id(index)] = memo
    known = dict.fromkeys(memo[1])
    known.update(dict.fromkeys(d for d in session_dirs if safepath.usable(d)))
    links: dict = {}  # the directories share their upper folders: each is looked at once
    resolved = (safepath.resolve(cwd, avoided, links) for cwd in known)
    return list(dict.fromkeys(cwd for cwd in resolved if cwd and safepath.is_dir(cwd, avoided, links)))


_index_cwds: dict = {}
_CWD = Session.__slots__.index("cwd")


def _cwds_of(index: dict) -> list[str]:
    """The distinct absolute working directories of the sessions of an index."""
    found: dict[str, None] = {}
    for agent_entry in index.values():
        sources = agent_entry.get("sources") if isinstance(agent_entry, dict) else None
        for entry in (sources or {}).values():
            for values in _cached_sessions(entry):
                cwd = values[_CWD] if isinstance(values, list) and len(values) > _CWD else None
                if cwd not in found and safepath.usable(cwd):
                    found[cwd] = None
    return list(found)


def _cached_sessions(entry) -> list:
    if isinstance(entry, list) and len(entry) >= 2 and isinstance(entry[1], list):
        return entry[1]
    return []


def candidate_dirs(env, session_dirs=()) -> list[str]:
    """The current directory with its ancestors, then the known session directories with
    theirs: every directory a per-project store could sit in, each once. Nothing inside a FUSE
    mount that discovery avoids (`mounts.avoided`: looking into a hung one would hang, and
    trajectoriz's own memory/ holds no store)."""
    avoided = mounts.avoided(env)
    found: dict[str, None] = {}
    start = current_directory(env, avoided)
    for directory in ([start] if start else []) + known_session_dirs(env, avoided, session_dirs):
        for candidate in ancestors(directory):
            if not mounts.inside(candidate, avoided):
                found.setdefault(candidate, None)
    return list(found)
