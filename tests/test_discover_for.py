"""`show ID` reads only the store of the agent a short id or file name names, until a warm
snapshot of every store exists (catalog.discover_for), and finds the very session a full
discovery finds."""

from __future__ import annotations

import os
import shutil

import catalog
from helpers import LIVE, base_env, cli


def two_agents(tmp_path) -> dict:
    """The live Claude and Codex stores in one $HOME."""
    env = base_env(tmp_path)
    for live, store in (("claude-2.1.332", ".claude"), ("codex-0.171.0", ".codex")):
        shutil.copytree(os.path.join(LIVE, live, store), os.path.join(env["HOME"], store))
    return env


def test_a_short_id_discovers_its_agent_only_and_finds_the_same_session(tmp_path):
    env = two_agents(tmp_path)
    everything = catalog.discover(env, use_cache=False).sessions
    for agent in ("claude", "codex"):
        wanted = next(s for s in everything if s.agent == agent)
        for ident in (wanted.short_id, catalog.file_name(wanted)):
            found = catalog.discover_for(env, ident)
            assert {s.agent for s in found.sessions} == {agent}
            assert catalog.find(found, ident).source == wanted.source


def test_a_native_id_or_an_unknown_prefix_looks_in_every_store(tmp_path):
    env = two_agents(tmp_path)
    codex_session = next(s for s in catalog.discover(env, use_cache=False).sessions if s.agent == "codex")
    found = catalog.discover_for(env, codex_session.native_id)
    assert {s.agent for s in found.sessions} == {"claude", "codex"}
    assert catalog.find(found, codex_session.native_id).source == codex_session.source


def test_show_by_short_id_prints_what_it_prints_after_a_full_listing(tmp_path):
    env = two_agents(tmp_path)
    listed = cli("list", "--all", "--json", env=env)
    first_id = listed.stdout.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode()
    warm = cli("show", first_id, env=env)
    shutil.rmtree(os.path.join(env["XDG_CACHE_HOME"], "trajectoriz"))
    cold = cli("show", first_id, env=env)
    assert cold.returncode == warm.returncode == 0 and cold.stdout == warm.stdout and len(cold.stdout) > 1000


def test_every_prefix_names_its_agent():
    import agents

    prefixes = {getattr(m, "PREFIX", m.NAME[:2]): m.NAME for m in agents.modules()}
    assert len(prefixes) == len(agents.names())  # no two agents share a prefix
    assert all(agents.named_by_prefix(prefix) == name for prefix, name in prefixes.items())
    assert agents.named_by_prefix("zz") is None


def test_loading_one_agent_imports_that_agent_only():
    """A warm `show cl-...` loads the Claude translator, not every agent (and the redaction
    rules one of them imports)."""
    import subprocess
    import sys

    from helpers import ROOT

    code = ("import sys; sys.path.insert(0, sys.argv[1]); import agents; agents.load('claude'); "
            "print(sorted(m for m in sys.modules if m.startswith('agents.')))")
    done = subprocess.run([sys.executable, "-c", code, ROOT], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['agents.base', 'agents.claude']"
