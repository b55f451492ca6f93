"""What `make test` tells a new user on a fresh machine: a test that needs a program that is not
installed is skipped rather than failing, and the summary says what to install; the tests of the
built executable, skipped until `make build`, are counted in one line of the summary. Each runs
pytest on the real test files, in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter

from helpers import ROOT

NEEDING = {  # test -> the programs it runs that a fresh machine may lack (its parameters: how many)
    "tests/test_memory.py::test_git_exclude_is_written_once_also_from_a_linked_worktree": ("git", 1),
    "tests/test_memory.py::test_tools_read_complete_correct_content": ("jq, rg", 1),
    "tests/test_memory.py::test_live_sessions_grow_appear_and_disappear": ("jq", 1),
    "tests/test_memory.py::test_each_reader_gets_one_whole_version_while_a_session_grows": ("jq, rg", 2),
    "tests/test_concurrency.py::test_reads_of_sessions_being_recorded_are_never_torn": ("dd, jq, rg", 1),
}
DEBIAN = {"git": "git", "rg": "ripgrep", "jq": "jq", "dd": "coreutils"}
MISSING = {"git", "rg", "jq", "dd"}


def pytest_run(*args: str, env: dict, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                           str(tmp_path / "basetemp"), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def path_without(folder, programs: set) -> str:
    """A PATH of one folder that links to every program on this PATH but `programs`."""
    os.makedirs(folder)
    for directory in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        names = os.listdir(directory) if os.path.isdir(directory) else []
        for name in names:
            if name not in programs and not os.path.lexists(os.path.join(folder, name)):
                os.symlink(os.path.join(directory, name), os.path.join(folder, name))
    return str(folder)


def test_a_test_needing_a_missing_program_is_skipped_and_the_summary_says_which(tmp_path):
    """Each skipped, none failed, and one line per reason above the counts: what to install."""
    env = {**os.environ, "PATH": path_without(tmp_path / "bin", MISSING)}
    done = pytest_run(*NEEDING, env=env, tmp_path=tmp_path)
    assert done.returncode == 0 and re.search(r"^\d+ skipped in ", done.stdout, re.M), done.stdout  # only skips
    counts = Counter()
    for programs, parameters in NEEDING.values():
        counts[programs] += parameters
    said = [f"{count} test(s) skipped: {programs} not installed (Debian: apt install "
            f"{' '.join(DEBIAN[p] for p in programs.split(', '))})" for programs, count in counts.items()]
    assert sorted(re.findall(r"^\d+ test\(s\) skipped: .*$", done.stdout, re.M)) == sorted(said)


PLUGIN = '''
def pytest_collection_finish(session):
    import test_binary
    test_binary.BINARY = test_binary.BINARY + "-not-built"
'''


def test_the_summary_says_the_built_executable_was_not_tested(tmp_path):
    (tmp_path / "not_built.py").write_text(PLUGIN)
    env = {k: v for k, v in os.environ.items() if k != "TRAJECTORIZ_TEST_BINARY"}
    env["PYTHONPATH"] = str(tmp_path)
    done = pytest_run("-p", "not_built", "tests/test_binary.py", env=env, tmp_path=tmp_path)
    skipped = re.search(r"^\d+ passed, (\d+) skipped in ", done.stdout, re.M)
    assert done.returncode == 0 and skipped and int(skipped.group(1)) >= 21, done.stdout
    assert (f"\n{skipped.group(1)} tests of the built executable were skipped: dist/trajectoriz is not "
            "built (run `make build` first)\n") in done.stdout
