"""Project privacy across agents: a project sees its own sessions and nothing else, however the
working directories were recorded.

Each live store records two sessions in /tmp/agents/proj-<agent> and one in
/tmp/agents/proj-<agent>-other. The tests re-home those paths (text files rewritten, SQLite
copies updated with sqlite3) into a real project (a git work tree with src/) under tmp, each
case recording them in another spelling: with `..` and a trailing slash, through a symlink, as
a subdirectory; and the odd session out as a sibling whose name shares the project's prefix, as
the project's parent, or through `..` out of it. `list`, `list --dir` (the project, its symlink)
and `search --local` (by first message and by --content) must show exactly the sessions inside.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3

import pytest

from discovery import catalog
from helpers import run_main
from homes import by_agent
from mutations import settle_sqlite

# agents whose live store records the working directory of each session
AGENTS = ["claude", "cline", "codex", "continue", "copilot", "gemini", "gptme", "hermes", "kilo", "kimi", "omp",
          "opencode", "openhands", "pi", "qwen"]

# case -> (how the project's sessions recorded their cwd, how the other one did, is it inside?)
# P is the project, S its sibling sharing its name as a prefix, W the folder holding both.
CASES = {
    "dotdot_and_trailing_slash": ("{P}/src/../", "{S}", False),
    "through_a_symlink": ("{W}/link-to-project", "{W}", False),
    "subdirectory": ("{P}/src/", "{P}/../{name}-other/..", False),
    "other_is_a_subdirectory_too": ("{P}//", "{P}/src/deeper/", True),
}


def rewrite_store(root: str, replacements: list[tuple[str, str]]) -> None:
    """Apply text replacements to every UTF-8 file under root and to every text value of every
    SQLite database (the copies: a store is never written); a folder named by the md5 of an old
    path (Kimi's sessions/<md5(work dir)>/) is renamed after the new one."""
    renames = {hashlib.md5(old.encode()).hexdigest(): hashlib.md5(new.encode()).hexdigest()
               for old, new in replacements}
    for folder, dirs, _ in os.walk(root):
        for name in dirs:
            if name in renames:
                os.rename(os.path.join(folder, name), os.path.join(folder, renames[name]))
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if name.endswith(("-wal", "-shm")) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            if data.startswith(b"SQLite format 3\x00"):
                rewrite_database(path, replacements)
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            for old, new in replacements:
                text = text.replace(old, new)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)


def rewrite_database(path: str, replacements: list[tuple[str, str]]) -> None:
    settle_sqlite(path)
    connection = sqlite3.connect(path)
    tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                               "AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        for column in [c[1] for c in connection.execute(f'PRAGMA table_info("{table}")').fetchall()]:
            for old, new in replacements:
                connection.execute(f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                                   f"WHERE typeof(\"{column}\") = 'text' AND instr(\"{column}\", ?)",
                                   (old, new, old))
    connection.commit()
    connection.close()


def ids(result) -> set:
    """The short ids of the sessions in a JSON listing or search (one record per line)."""
    assert result.returncode in (0, 1), result.stderr  # search: 1 is "nothing found"
    return {json.loads(line)["id"] for line in result.stdout.splitlines()}


@pytest.fixture(params=AGENTS)
def agent(request):
    return request.param


@pytest.mark.parametrize("case", CASES)
def test_a_project_shows_exactly_its_sessions(agent, case, tmp_path):
    home = by_agent(agent)
    (tmp_path / "store").mkdir()
    env = home.build(tmp_path / "store")
    original = {s.native_id: s.cwd for s in catalog.discover(env, use_cache=False).sessions}
    own = {i for i, cwd in original.items() if cwd == home.project}
    others = {i for i, cwd in original.items() if cwd == home.project + "-other"}
    assert len(own) >= 2 and others and len(own) + len(others) == len(original), original

    work = tmp_path / "work"
    project, sibling = work / f"proj-{agent}", work / f"proj-{agent}-other"
    for folder in (project / ".git", project / "src" / "deeper", sibling):
        folder.mkdir(parents=True)
    (work / "link-to-project").symlink_to(project)
    spell_own, spell_other, other_inside = CASES[case]
    names = {"P": str(project), "S": str(sibling), "W": str(work), "name": f"proj-{agent}"}
    rewrite_store(str(tmp_path / "store"), [(home.project + "-other", spell_other.format(**names)),
                                            (home.project, spell_own.format(**names))])
    found = catalog.discover(env, use_cache=False).sessions
    assert {s.native_id: s.cwd for s in found} == {
        i: (spell_own if i in own else spell_other).format(**names) for i in original}
    short = {s.native_id: s.short_id for s in found}
    own, others = {short[i] for i in own}, {short[i] for i in others}

    expected = own | (others if other_inside else set())
    inside = str(project / "src")
    assert ids(run_main(env, ["list", "--json"], cwd=inside)) == expected
    for directory in (project, work / "link-to-project", str(project) + "/"):
        assert ids(run_main(env, ["list", "--json", "--dir", str(directory)], cwd=str(tmp_path))) == expected
    assert ids(run_main(env, ["search", "--json", "--local", "SCENARIO"], cwd=inside)) == expected
    assert ids(run_main(env, ["search", "--json", "--local", "--content", "SCENARIO-DONE"], cwd=inside)) == expected
    assert ids(run_main(env, ["list", "--json", "--dir", str(sibling)], cwd=inside)) == (
        set() if other_inside or case != "dotdot_and_trailing_slash" else others)
    assert ids(run_main(env, ["list", "--json", "--all"], cwd=inside)) == own | others


def test_the_mount_shows_exactly_the_projects_sessions(tmp_path):
    """All eleven stores in one $HOME, the project's sessions recorded through a symlink with a
    trailing slash, the others in a sibling sharing the project's prefix: the mount of the
    project lists exactly the project's sessions, and nothing of the sibling's."""
    from test_memory import FUSE_PROBLEM, client, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    work = tmp_path / "work"
    project, sibling = work / "proj", work / "proj-other"
    for folder in (project / ".git", sibling):
        folder.mkdir(parents=True)
    (work / "link").symlink_to(project)
    env, replacements, own = None, [], set()
    for agent in AGENTS:
        home = by_agent(agent)
        (tmp_path / agent).mkdir()
        built = home.build(tmp_path / agent)
        own |= {s.native_id for s in catalog.discover(built, use_cache=False).sessions if s.cwd == home.project}
        shutil.copytree(built["HOME"], str(tmp_path / "home"), dirs_exist_ok=True)
        replacements += [(home.project + "-other", str(sibling)), (home.project, f"{work}/link/")]
        env = env or {**built, "HOME": str(tmp_path / "home")}
    rewrite_store(str(tmp_path / "home"), replacements)
    found = catalog.discover(env, use_cache=False).sessions
    wanted = {catalog.file_name(s) for s in found if s.native_id in own}
    assert len(wanted) == 2 * len(AGENTS)
    point = str(tmp_path / "memory")
    try:
        mount(env, str(project), point)
        cards = {name.replace(".atif.json", kind) for name in wanted for kind in (".card.md", ".transcript.md")}
        assert set(client("ls", point).stdout.split()) == wanted | cards | {"README.md", "INDEX.md"}
        assert client("grep", "-R", "-l", "-F", str(sibling), point).stdout == ""  # -R: the documents too
    finally:
        take_down(point)
