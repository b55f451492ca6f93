"""A project's first discovery (no snapshot yet) reads the project's own transcripts, not every
transcript (catalog.discover with `within`): Claude Code project folders named after another
directory, and Codex rollouts whose first line names another directory, are left out. What it
lists is what a discovery of every store lists for the project, a folder reached through a
symlink included."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import catalog
from agents import claude, codex
from helpers import LIVE, base_env, live_claude_in, run_main

PROJECTS = ("proj-claude", "proj-claude-other", "proj-codex", "proj-codex-other")


@pytest.fixture
def store(tmp_path):
    """The live Claude and Codex stores, their sessions in four projects."""
    env = base_env(tmp_path)
    projects = tmp_path / "work"
    for name in PROJECTS:
        (projects / name / ".git").mkdir(parents=True)
    live_claude_in(env, projects)
    sessions = os.path.join(env["HOME"], ".codex", "sessions")
    shutil.copytree(os.path.join(LIVE, "codex-0.171.0", ".codex", "sessions"), sessions)
    for folder, _, files in os.walk(sessions):
        for name in files:
            path = os.path.join(folder, name)
            text = open(path, encoding="utf-8").read().replace("/tmp/agents/", f"{projects}/")
            open(path, "w", encoding="utf-8").write(text)
    return env, projects


def scanned(monkeypatch) -> dict:
    """agent -> the sources its scan was asked for."""
    asked: dict = {"claude": [], "codex": []}
    for module in (claude, codex):
        def recording(source, env, module=module, original=module.scan):
            asked[module.NAME].append(source)
            return original(source, env)
        monkeypatch.setattr(module, "scan", recording)
    return asked


def native_ids(sessions) -> set:
    return {(s.agent, s.native_id) for s in sessions}


@pytest.mark.parametrize("project", PROJECTS)
def test_a_projects_first_discovery_reads_its_own_transcripts_only(store, project, monkeypatch):
    env, projects = store
    root = str(projects / project)
    expected = catalog.Scope(root, env).filter(catalog.discover(env, use_cache=False).sessions)
    asked = scanned(monkeypatch)
    found = catalog.discover(catalog.looking_in(env, root), within=root)
    assert native_ids(catalog.Scope(root, env).filter(found.sessions)) == native_ids(expected)
    assert found.scoped
    for agent in ("claude", "codex"):
        mine = {s.source for s in expected if s.agent == agent}
        assert set(asked[agent]) == mine, agent  # the others were never scanned
    assert any(native_ids(expected))


def test_a_folder_named_after_a_symlink_to_the_project_is_read(store, tmp_path):
    """Its name is another directory's; its first transcript's directory resolves into the
    project."""
    env, projects = store
    link = tmp_path / "link"
    link.symlink_to(projects / "proj-claude")
    base = os.path.join(env["HOME"], ".claude", "projects")
    (original,) = [f for f in os.listdir(base) if f.endswith("proj-claude")]
    named = "-" + str(link).strip("/").replace("/", "-").replace("_", "-")
    shutil.copytree(os.path.join(base, original), os.path.join(base, named))
    for name in os.listdir(os.path.join(base, original)):
        if name.endswith(".jsonl"):
            os.unlink(os.path.join(base, original, name))
    for name in os.listdir(os.path.join(base, named)):
        if name.endswith(".jsonl"):
            path = os.path.join(base, named, name)
            text = open(path, encoding="utf-8").read().replace(str(projects / "proj-claude"), str(link))
            open(path, "w", encoding="utf-8").write(text)
    root = str(projects / "proj-claude")
    found = catalog.discover(catalog.looking_in(env, root), within=root)
    listed = catalog.Scope(root, env).filter(found.sessions)
    assert {s.agent for s in listed} == {"claude"} and all(named in s.source for s in listed)


def listing(env, cwd, *args) -> list:
    result = run_main(env, ["list", "--json", *args], cwd=cwd)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_a_projects_first_listing_is_the_listing_every_project_gives(store):
    env, projects = store
    first = {p: listing(env, str(projects / p)) for p in PROJECTS}
    again = {p: listing(env, str(projects / p)) for p in PROJECTS}
    listing(env, str(projects / PROJECTS[0]), "--all")
    for project in PROJECTS:
        shutil.rmtree(os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "catalog-v1"), ignore_errors=True)
        listing(env, str(projects / project), "--all")  # a snapshot of every store from there
        after = listing(env, str(projects / project))
        assert first[project] == again[project] == after and first[project], project


def test_a_first_discovery_of_many_transcripts_lists_the_same_in_one_or_several_processes(
        tmp_path, monkeypatch):
    """Scans of a first run are shared with forked children (parallel.forked) when the first
    POOL_PROBE say the rest would take long: what is listed does not depend on it."""
    import threading

    import parallel

    env = base_env(tmp_path)
    sample = os.path.join(LIVE, "claude-2.1.332", ".claude", "projects", "-tmp-agents-proj-claude",
                          "348a3463-5332-480a-8329-09f4fe2cc499.jsonl")
    folder = os.path.join(env["HOME"], ".claude", "projects", "-tmp-agents-proj-claude")
    os.makedirs(folder)
    text = open(sample, encoding="utf-8").read()
    for number in range(catalog.POOL_SCANS + 40):
        native = f"{number:08x}-5332-480a-8329-09f4fe2cc499"
        with open(os.path.join(folder, f"{native}.jsonl"), "w", encoding="utf-8") as handle:
            handle.write(text.replace("348a3463-5332-480a-8329-09f4fe2cc499", native)
                         .replace("SCENARIO claude-2", f"SCENARIO claude-2 number {number}"))
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # as in a command: threads of other tests' servers
    shared = []                                                 # would keep the scans here
    monkeypatch.setattr(parallel, "forked", lambda *a, original=parallel.forked, **k: shared.append(1) or original(*a, **k))

    def listed(fork_pays: float) -> list:
        monkeypatch.setattr(catalog, "FORK_PAYS", fork_pays)
        return [(s.short_id, s.title, s.cwd, s.started) for s in catalog.discover(env, ["claude"], use_cache=False).sessions]

    alone = listed(float("inf"))
    assert len(alone) == catalog.POOL_SCANS + 40 and len(set(alone)) == len(alone) and not shared
    assert listed(0.0) == alone and shared == [1]
