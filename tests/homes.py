"""A populated $HOME for every agent trajectoriz reads, for the suites that go over all of them
(faults, redaction, scoping, properties).

An agent with a live store (tests/fixtures/samples/live/<agent>-<version>) gets a copy of it;
an agent without one gets the store its own test builds from samples (Amp, Crush, Cursor,
Goose, Roo). Each home names an `anchor`: text the agent's documents show as message or
tool text, where a test can plant content that must come out (or, for secrets, must not).
"""

from __future__ import annotations

import glob
import os
import pathlib
import shutil
from dataclasses import dataclass
from typing import Callable

import agents
from helpers import LIVE, base_env


@dataclass
class AgentHome:
    agent: str
    build: Callable[[pathlib.Path], dict]   # root folder -> env (HOME, caches, PWD where needed)
    anchor: str
    project: str = ""              # where the sessions' recorded cwd points, before any re-homing


def live_store(agent: str) -> str | None:
    """The live store of an agent (the module's NAME or its file name), if one was recorded."""
    module = agents.load(agent)
    stem = module.__name__.rsplit(".", 1)[1]
    released_as = {"mswea": "mini-swe-agent", "hermes": "hermes-agent", "kimi": "kimi-cli", "omp": "oh-my-pi"}
    aliases = {agent, stem, released_as.get(agent, agent)}
    for path in sorted(glob.glob(os.path.join(LIVE, "*"))):
        name = os.path.basename(path)
        if os.path.isdir(path) and any(name.startswith(a + "-") and name[len(a) + 1].isdigit() for a in aliases):
            return path
    return None


def live_stores() -> list[tuple[str, str]]:
    """(agent, live store) for every agent with a live store, in agent order."""
    return [(agent, live_store(agent)) for agent in agents.names() if live_store(agent)]


def _copy_live(agent: str) -> Callable[[str], dict]:
    def build(root: pathlib.Path) -> dict:
        home = str(root / "home")
        shutil.copytree(live_store(agent), home, symlinks=True)
        env = base_env(root, home=home)
        if agent == "aider":  # found only from inside its project
            env["PWD"] = os.path.join(home, "projects", "proj-aider")
        return env
    return build


def _amp(root: pathlib.Path) -> dict:
    import test_agent_amp

    home = test_agent_amp.threads_home(root)
    return base_env(root, home=str(home))


def _goose(root: pathlib.Path) -> dict:
    import test_agent_goose

    env, _ = test_agent_goose.goose_home(root)
    return env


def _cursor(root: pathlib.Path) -> dict:
    import test_agent_cursor

    env = base_env(root)
    for source, target in test_agent_cursor.LAYOUT.items():
        destination = os.path.join(env["HOME"], ".cursor", target)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copy2(source, destination)
    return env


def _crush(root: pathlib.Path) -> dict:
    import test_agent_crush

    env = base_env(root)
    project = str(root / "proj-crush")
    test_agent_crush.build_database(project)
    env["PWD"] = project
    return env


def _roo(root: pathlib.Path) -> dict:
    import test_agent_roo

    env = base_env(root)
    test_agent_roo.install(env["HOME"])
    return env


BUILT = {
    "amp": (_amp, "Listing migrations."),
    "crush": (_crush, "It says hello."),
    "cursor": (_cursor, "hello world"),
    "goose": (_goose, "a.txt is empty"),
    "roo": (_roo, "split the module"),
}


def agent_homes() -> list[AgentHome]:
    """One home per agent, in agent order. An agent with neither a live store nor a builder is
    a gap in the tests: listing it here with no way to build it makes the suites fail."""
    found = []
    for agent in agents.names():
        if live_store(agent):
            found.append(AgentHome(agent, _copy_live(agent), "note.txt", f"/tmp/agents/proj-{agent}"))
        else:
            build, anchor = BUILT[agent]
            found.append(AgentHome(agent, build, anchor))
    return found


def by_agent(agent: str) -> AgentHome:
    return next(h for h in agent_homes() if h.agent == agent)
