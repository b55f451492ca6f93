"""Facts on the first read (issue 36): on a fresh cache, the first read of the mount's INDEX.md
and the first default `search` see every session's facts (requests, title, steps, outcome),
rendered before they answer; a session's title is the same before and after it is rendered.

The project: real Claude Code sessions of the public samples (tests/fixtures/samples/claude,
provenance in its SOURCES.md): the Volcano session (92 steps, the user's requests in Chinese,
a sub-agent) and the three dotfile sessions whose ai-title (`Fix code linting issues`) is recorded
after their first request, re-homed into one git project.
"""

import json
import os
import re
import shutil
from types import SimpleNamespace

from discovery import catalog
from helpers import SAMPLES, base_env, cli
from mount import memoryfs, memoryindex
from rendering import documents

CLAUDE = os.path.join(SAMPLES, "claude")
VOLCANO = "7ef4b236-d946-48a6-a856-e45b02af7be7"
TITLED = "b23883a8-3ff5-47ba-a2b9-d1b710b77d8d"  # its first request 修复代码lint问题, its ai-title:
AI_TITLE = "Fix code linting issues"
EIGHTH = "我们应该按照claim计算 因此我们需要cache集群中的claim相关信息"  # the Volcano session's 8th request
_CWD = re.compile(r'"cwd":"[^"]*"')


def real_project(tmp_path) -> tuple[dict, str]:
    env = base_env(tmp_path)
    project = str(tmp_path / "proj")
    os.makedirs(os.path.join(project, ".git"))
    folder = os.path.join(env["HOME"], ".claude", "projects", "-proj")
    os.makedirs(folder)
    shutil.copytree(os.path.join(CLAUDE, "dotfile-volcano"), folder, dirs_exist_ok=True)
    shutil.copytree(os.path.join(CLAUDE, "dotfile-titles"), folder, dirs_exist_ok=True)
    for where, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(where, name)
            text = open(path, encoding="utf-8").read()
            open(path, "w", encoding="utf-8").write(_CWD.sub(f'"cwd":"{project}"', text))
    return env, project


def read_all(fs, name: str) -> bytes:
    fi = SimpleNamespace(flags=os.O_RDONLY, fh=0, keep_cache=0, direct_io=0)
    fs.open("/" + name, fi)
    data = fs.read("/" + name, 1 << 24, 0, fi)
    fs.release("/" + name, fi)
    return data


def index_rows(data: bytes) -> dict:
    """File name -> the cells of its INDEX.md row."""
    rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            for line in data.decode().splitlines() if line.startswith("| `")]
    return {cells[0][1:-1]: cells[1:] for cells in rows}


def session_of(env, native_id: str):
    return next(s for s in catalog.discover(env).sessions if s.native_id == native_id)


def test_default_search_on_a_fresh_cache_finds_a_session_by_its_8th_request(tmp_path):
    env, project = real_project(tmp_path)
    volcano = session_of(env, VOLCANO)
    found = cli("search", "--json", "claim相关信息", env=env, cwd=project)  # the first command: nothing cached
    assert found.returncode == 0, found.stderr
    assert [json.loads(line)["id"] for line in found.stdout.splitlines()] == [volcano.short_id]
    assert b"not read yet" not in found.stderr
    doc = json.loads(cli("show", volcano.short_id, env=env).stdout)
    requests = [s["message"] for s in doc["steps"] if s["source"] == "user"]
    assert requests[7] == EIGHTH and EIGHTH not in catalog.first_message(volcano)  # the 8th, not the first


def test_a_title_is_the_same_before_and_after_its_session_is_rendered(tmp_path):
    """The agent's title recorded after the first request (Claude's ai-title, past what a
    listing reads) is what INDEX.md's first read and the first search show, as after."""
    env, project = real_project(tmp_path)
    titled = session_of(env, TITLED)
    assert titled.title != AI_TITLE  # what discovery alone knows: the first request
    searched = cli("search", "--json", "--local", "lint", env=env, cwd=project)
    assert [json.loads(line)["title"] for line in searched.stdout.splitlines()] == [AI_TITLE]
    fs = memoryfs.MemoryFS(project, env)
    rows = index_rows(read_all(fs, memoryindex.INDEX))
    assert rows[catalog.file_name(titled)][3] == AI_TITLE
    assert all(row[2] for row in rows.values())  # every session's steps, at the first read
    fs.destroy("/")
    assert json.loads(cli("show", titled.short_id, env=env).stdout)["steps"]  # rendered once more
    assert cli("list", "--json", env=env, cwd=project).stdout.decode().count(AI_TITLE) == 1
    assert index_rows(read_all(memoryfs.MemoryFS(project, env), memoryindex.INDEX)) == rows
    facts = documents.Facts(env).latest(titled)
    assert facts is not None and facts["title"] == AI_TITLE
