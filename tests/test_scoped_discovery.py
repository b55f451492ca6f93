"""A project's first discovery (no snapshot yet) reads the project's own transcripts, not every
transcript (catalog.discover with `within`): Claude Code and Qwen Code project folders named
after another directory, Codex rollouts whose first line names another directory, and Kimi CLI
sessions whose kimi.json work dir is another, are left out. What it lists is what a discovery
of every store lists for the project, a folder reached through a symlink included."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from agents import claude, codex, kimi, qwen
from core.hashes import md5
from discovery import catalog
from helpers import LIVE, base_env, live_claude_in, run_main

PROJECTS = ("proj-claude", "proj-claude-other", "proj-codex", "proj-codex-other", "proj-kimi",
            "proj-kimi-other", "proj-qwen", "proj-qwen-other")
AGENTS = (claude, codex, kimi, qwen)


@pytest.fixture
def store(tmp_path):
    """The live Claude and Codex stores, their sessions in four projects."""
    env = base_env(tmp_path)
    projects = tmp_path / "work"
    for name in PROJECTS:
        (projects / name / ".git").mkdir(parents=True)
    live_claude_in(env, projects)
    for sample, store in (("codex-0.171.0", ".codex/sessions"), ("kimi-cli-1.52.0", ".kimi"),
                          ("qwen-0.24.4", ".qwen")):
        target = os.path.join(env["HOME"], store)
        shutil.copytree(os.path.join(LIVE, sample, store), target)
        for folder, _, files in os.walk(target):
            for name in files:
                path = os.path.join(folder, name)
                text = open(path, encoding="utf-8").read().replace("/tmp/agents/", f"{projects}/")
                open(path, "w", encoding="utf-8").write(text)
    kimi_sessions = os.path.join(env["HOME"], ".kimi", "sessions")
    for name in ("proj-kimi", "proj-kimi-other"):  # its folders are named by the md5 of the work dir
        os.rename(os.path.join(kimi_sessions, md5(f"/tmp/agents/{name}".encode()).hexdigest()),
                  os.path.join(kimi_sessions, md5(str(projects / name).encode()).hexdigest()))
    return env, projects


def scanned(monkeypatch) -> dict:
    """agent -> the sources its scan was asked for."""
    asked: dict = {module.NAME: [] for module in AGENTS}
    for module in AGENTS:
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
    for module in AGENTS:
        mine = {s.source for s in expected if s.agent == module.NAME}
        assert set(asked[module.NAME]) == mine, module.NAME  # the others were never scanned
    assert {s.agent for s in expected} == {project.split("-")[1]}


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
    from discovery import snapshot

    env, projects = store
    first = {p: listing(env, str(projects / p)) for p in PROJECTS}
    again = {p: listing(env, str(projects / p)) for p in PROJECTS}
    listing(env, str(projects / PROJECTS[0]), "--all")
    for project in PROJECTS:
        shutil.rmtree(os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", snapshot.FOLDER), ignore_errors=True)
        listing(env, str(projects / project), "--all")  # a snapshot of every store from there
        after = listing(env, str(projects / project))
        assert first[project] == again[project] == after and first[project], project


def test_a_first_discovery_of_many_transcripts_lists_the_same_in_one_or_several_processes(
        tmp_path, monkeypatch):
    """Scans of a first run are shared with forked children (parallel.forked) when the first
    POOL_PROBE say the rest would take long: what is listed does not depend on it."""
    from core import parallel

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
    monkeypatch.setattr(parallel, "alone", lambda: True)  # as in a command: threads of other tests' servers
    shared = []                                                 # would keep the scans here
    monkeypatch.setattr(parallel, "forked", lambda *a, original=parallel.forked, **k: shared.append(1) or original(*a, **k))

    def listed(fork_pays: float) -> list:
        monkeypatch.setattr(catalog, "FORK_PAYS", fork_pays)
        return [(s.short_id, s.title, s.cwd, s.started) for s in catalog.discover(env, ["claude"], use_cache=False).sessions]

    alone = listed(float("inf"))
    assert len(alone) == catalog.POOL_SCANS + 40 and len(set(alone)) == len(alone) and not shared
    assert listed(0.0) == alone and shared == [1]


# Codex: the directory of a rollout, from its first line ------------------------------------------
def first_line_cwd(path: str) -> str | None:
    """The rollout's directory as the whole first line gives it."""
    with open(path, "rb") as handle:
        line = handle.readline()
    try:
        record = json.loads(line) if line.endswith(b"\n") else None
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("type") != "session_meta" or not isinstance(record.get("payload"), dict):
        return None
    cwd = record["payload"].get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


META = '{"timestamp":"2026-11-29T20:42:19.430Z","ordinal":0,"type":"session_meta","payload":{"account_scoped":true,'


@pytest.mark.parametrize("line, expected", [
    (META + '"id":"01a2","cwd":"/w/p","base_instructions":"' + "x" * 30000 + '"}}\n', "/w/p"),
    (META + '"cwd":"/w/a \\"q\\" \\u00e9\\\\b","cli_version":"0.171.0"}}\n', '/w/a "q" \u00e9\\b'),
    (META + '"git":{"cwd":"/elsewhere"},"cwd":"/w/p"}}\n', "/w/p"),   # not plain: the whole line
    (META + '"cwd":"/w/p' + "x" * 10000, None),                       # cut inside the directory
    (META + '"cwd":"/w/pro', None),
    ('{"timestamp":"t","type":"response_item","payload":{"cwd":"/w/p"}}\n', None),
    ('{"type":"session_meta","payload":{"cwd":""}}\n', None),
    ('{"type":"session_meta","payload":{"cwd":7}}\n', None),
], ids=["codex", "escaped", "nested-first", "cut-long", "cut", "not-meta", "empty", "not-text"])
def test_a_rollouts_directory_is_the_one_its_first_line_names(tmp_path, line, expected):
    """Read from the line's beginning when it begins as Codex writes it, else from the whole
    line: the same directory either way, and none from a line cut inside it."""
    path = tmp_path / "rollout-2026-11-29T20-42-19-01a2.jsonl"
    path.write_text(line + '{"timestamp":"t","type":"event_msg","payload":{"type":"task_started"}}\n')
    if not line.endswith("\n"):
        path.write_text(line)
    assert codex.cwd_of(str(path)) == expected


def test_every_sample_rollouts_directory_is_the_whole_first_lines():
    """The beginning of the line gives what the whole line gives, for every rollout of the
    samples (the live release's among them), and it is what a Codex line begins with."""
    import glob

    from helpers import ROOT

    rollouts = sorted(set(glob.glob(os.path.join(LIVE, "codex-*", ".codex", "sessions", "**", "*.jsonl"), recursive=True)
                          + glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "rollout-*.jsonl"), recursive=True)))
    assert len(rollouts) >= 5
    assert [codex.cwd_of(path) for path in rollouts] == [first_line_cwd(path) for path in rollouts]
    live = [path for path in rollouts if path.startswith(LIVE)]
    assert live and all(codex.META_CWD.match(open(path, "rb").read(codex.META_PEEK)) for path in live)


def test_a_hostile_kimi_json_does_not_stop_a_projects_listing(store, monkeypatch):
    """A work dir that is no valid text (a lone surrogate, which JSON allows) in kimi.json, and
    a store module whose `outside` fails on its files: the project's first discovery still
    lists every store's sessions of the project (before: one bad kimi.json raised out of the
    discovery of every project)."""
    env, projects = store
    path = os.path.join(env["HOME"], ".kimi", "kimi.json")
    meta = json.load(open(path, encoding="utf-8"))
    meta["work_dirs"].insert(0, {"path": "/w/\ud800"})
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(meta))  # ASCII: the surrogate written as \ud800
    for project in ("proj-kimi", "proj-qwen"):
        root = str(projects / project)
        if project == "proj-qwen":
            monkeypatch.setattr(qwen, "outside", lambda *args: 1 / 0)
        found = catalog.discover(catalog.looking_in(env, root), within=root, use_cache=False)
        assert {s.agent for s in catalog.Scope(root, env).filter(found.sessions)} == {project.split("-")[1]}
