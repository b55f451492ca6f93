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
