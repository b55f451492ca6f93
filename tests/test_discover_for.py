"""`show ID` reads only the store of the agent a short id or file name names, until a warm
snapshot of every store exists (catalog.discover_for), and finds the very session a full
discovery finds."""

from __future__ import annotations

import os
import shutil

from discovery import catalog
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
    assert done.stdout.strip() == "['agents.base', 'agents.claude', 'agents.titles']"  # and the helpers it uses


def claude_store(tmp_path, names: list[str], folders=("-tmp-agents-proj-claude",)) -> dict:
    """A Claude store of copies of one live transcript, named `names`, in each of `folders`."""
    env = base_env(tmp_path)
    sample = os.path.join(LIVE, "claude-2.1.332", ".claude", "projects", "-tmp-agents-proj-claude",
                          "348a3463-5332-480a-8329-09f4fe2cc499.jsonl")
    text = open(sample, encoding="utf-8").read()
    for folder in folders:
        os.makedirs(os.path.join(env["HOME"], ".claude", "projects", folder))
        for name in names:
            with open(os.path.join(env["HOME"], ".claude", "projects", folder, f"{name}.jsonl"), "w") as handle:
                handle.write(text.replace("348a3463-5332-480a-8329-09f4fe2cc499", name)
                             .replace("/tmp/agents/proj-claude", f"/tmp/agents/{folder}"))
    return env


def scanned_names(monkeypatch) -> list:
    from agents import claude

    asked = []
    monkeypatch.setattr(claude, "scan", lambda source, env, original=claude.scan:
                        asked.append(os.path.basename(source)) or original(source, env))
    return asked


NAMES = [f"{n:08x}-5332-480a-8329-09f4fe2cc499" for n in range(40)]


def test_a_first_show_scans_only_the_transcript_its_id_names(tmp_path, monkeypatch):
    env = claude_store(tmp_path, NAMES)
    everything = catalog.discover(env, use_cache=False).sessions
    wanted = everything[7]
    asked = scanned_names(monkeypatch)
    found = catalog.discover_for(env, wanted.short_id)
    assert asked == [os.path.basename(wanted.source)]
    assert catalog.find(found, wanted.short_id) == wanted


def test_sessions_whose_ids_share_digits_are_all_scanned_and_get_the_ids_of_a_full_discovery(
        tmp_path, monkeypatch):
    real = catalog.identity_hash
    shared = {NAMES[3], NAMES[9]}  # their hashes share 8 digits, so both ids are lengthened
    monkeypatch.setattr(catalog, "identity_hash", lambda identity: "abcdef01" + real(identity)[8:]
                        if identity.split(":", 1)[1] in shared else real(identity))
    env = claude_store(tmp_path, NAMES)
    everything = catalog.discover(env, use_cache=False).sessions
    wanted = next(s for s in everything if s.native_id == NAMES[9])
    assert len(wanted.short_id) == len("cl-") + 12
    asked = scanned_names(monkeypatch)
    found = catalog.discover_for(env, wanted.short_id)
    assert sorted(asked) == sorted(f"{name}.jsonl" for name in shared)
    assert catalog.find(found, wanted.short_id) == wanted
    assert sorted(s.short_id for s in found.sessions) == sorted(s.short_id for s in everything
                                                              if s.native_id in shared)


def test_one_id_in_two_projects_each_session_is_found_as_a_full_discovery_finds_it(tmp_path, monkeypatch):
    """A transcript resumed in two projects: both are scanned (the twin's id hashes its
    directory too, so that one is found through the whole store)."""
    env = claude_store(tmp_path, NAMES[:5], folders=("-tmp-agents-one", "-tmp-agents-two"))
    everything = catalog.discover(env, use_cache=False).sessions
    for wanted in (s for s in everything if s.native_id == NAMES[2]):
        found = catalog.discover_for(env, wanted.short_id)
        assert catalog.find(found, wanted.short_id) == wanted
    assert len({s.short_id for s in everything if s.native_id == NAMES[2]}) == 2


def test_only_files_named_like_modules_are_taken_for_agents(tmp_path, monkeypatch):
    """A stray copy beside the agents (an editor's backup, `claude.orig.py`) is no module."""
    import agents

    for name in ("alpha.py", "alpha.orig.py", ".#beta.py", "notes.txt", "gamma.py"):
        (tmp_path / name).write_text("")
    monkeypatch.setattr(agents, "__path__", [str(tmp_path)])
    assert agents._module_names() == ["alpha", "gamma"]
