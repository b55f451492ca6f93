"""Shell completion (`trajectoriz --completion SHELL`, completion.py), loaded into real bash, zsh
and fish, each asked for candidates as it asks when the user presses Tab: bash by calling the
completion function with COMP_WORDS set, zsh through a pseudo-terminal (zpty) with compadd
recording what it is given, fish with `complete -C`. The program on PATH is the source tree,
run on the example store, so the session ids offered are the store's real ones.
"""

from __future__ import annotations

import json
import re
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from helpers import NOT_INSTALLED, ROOT, cli

sys.path.insert(0, os.path.join(ROOT, "examples"))
import demo  # noqa: E402  (stages the example store the way `make demo` does)

SHELLS = ("bash", "zsh", "fish")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The example store's project holding a file and a folder, and an environment whose PATH has
    `trajectoriz` and `trajectoriz-cli`: the source tree."""
    workdir = tmp_path_factory.mktemp("completion")
    env, project = demo.stage(str(workdir))
    programs = workdir / "bin"
    programs.mkdir()
    for name in ("trajectoriz", "trajectoriz-cli"):
        (programs / name).write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} '
                                     f'{shlex.quote(os.path.join(ROOT, "trajectoriz.py"))} "$@"\n')
        (programs / name).chmod(0o755)
    os.mkdir(os.path.join(project, "notes.d"))
    open(os.path.join(project, "notes.md"), "w").close()
    env = {"PATH": f"{programs}:/usr/bin:/bin", "HOME": env["HOME"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
           "TZ": "UTC", "LANG": "C.UTF-8", "TERM": "dumb"}
    scripts = workdir / "scripts"
    scripts.mkdir()
    for shell in SHELLS:
        done = cli("--completion", shell, env=env, cwd=project)
        assert done.returncode == 0, done.stderr
        (scripts / ("_trajectoriz" if shell == "zsh" else f"trajectoriz.{shell}")).write_bytes(done.stdout)
    ids = [json.loads(line)["id"] for line in cli("list", "--json", env=env, cwd=project).stdout.splitlines()]
    assert len(ids) == 12
    return env, project, str(scripts), ids


def bash_candidates(setup, line: str) -> set[str]:
    env, project, scripts, _ = setup
    driver = ('source "$1"; read -ra COMP_WORDS <<< "$2"; [[ $2 == *" " ]] && COMP_WORDS+=("");'
              'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _trajectoriz; printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "-c", driver, "bash", os.path.join(scripts, "trajectoriz.bash"), line],
                          env=env, cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return set(done.stdout.split("\n")) - {""}


ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "compadd() { local -a found; builtin compadd -O found \"\$@\"; print -rl -- \$found >> ${(q)2}; builtin compadd \"\$@\" }"
zpty -w z "finished() { print -- '-END-' >> ${(q)2} }; comppostfuncs=(finished); bindkey '^I' complete-word"
zpty -w -n z "$3"$'\t'
for i in {1..300}; do
    [[ -f $2 ]] && grep -qx -- -END- $2 && break
    sleep 0.1
done
zpty -d z
"""


def zsh_candidates(setup, line: str, tmp_path) -> set[str]:
    """zsh completes only in its line editor: an interactive zsh in a pseudo-terminal, Tab typed
    after the line; every compadd call writes the matches it adds into a file."""
    env, project, scripts, _ = setup
    out = tmp_path / "candidates"
    out.unlink(missing_ok=True)
    subprocess.run(["zsh", "-f", "-c", ZSH_DRIVER, "zsh", scripts, str(out), line],
                   env=env, cwd=project, capture_output=True, timeout=60)
    found = out.read_text().split("\n")
    assert "-END-" in found, "zsh never finished completing"
    return set(found) - {"", "-END-"}


def fish_candidates(setup, line: str) -> set[str]:
    env, project, scripts, _ = setup
    done = subprocess.run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C $argv[2]',
                           os.path.join(scripts, "trajectoriz.fish"), line],
                          env=env, cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return {candidate.split("\t")[0] for candidate in done.stdout.split("\n")} - {""}


@pytest.fixture(params=SHELLS)
def candidates(request, setup, tmp_path):
    """Candidates for a command line, as the shell of the test computes them."""
    shell = request.param
    if shutil.which(shell) is None:  # .ci/run installs all three
        pytest.skip(f"{shell} {NOT_INSTALLED} {shell})")
    if shell == "bash":
        return lambda line: bash_candidates(setup, line)
    if shell == "zsh":
        return lambda line: zsh_candidates(setup, line, tmp_path)
    return lambda line: fish_candidates(setup, line)


def test_commands_are_completed(candidates):
    assert candidates("trajectoriz s") == {"show", "search", "stats", "serve"}
    assert candidates("trajectoriz-cli fo") == {"forget"}


def test_options_are_completed(candidates):
    assert candidates("trajectoriz show --m") == {"--markdown", "--max-chars"}
    assert candidates("trajectoriz search --c") == {"--content"}


@pytest.mark.parametrize("command", ["show", "forget", "resume", "handoff"])
def test_show_and_forget_offer_the_projects_session_ids_and_files(candidates, setup, command):
    _, _, _, ids = setup
    assert candidates(f"trajectoriz {command} ").issuperset(ids)
    assert candidates(f"trajectoriz {command} cl-") == {i for i in ids if i.startswith("cl-")} != set()
    assert candidates(f"trajectoriz {command} not").issubset({"notes.md", "notes.d", "notes.d/"})
    assert candidates(f"trajectoriz {command} notes.m") == {"notes.md"}


def test_blame_and_validate_complete_files(candidates):
    for command in ("blame", "validate"):
        assert candidates(f"trajectoriz {command} notes.m") == {"notes.md"}


def test_folders_agents_and_shells_are_completed(candidates):
    assert candidates("trajectoriz export --out notes") in ({"notes.d"}, {"notes.d/"})
    assert candidates("trajectoriz list --agent cl") == {"claude", "cline"}
    assert candidates("trajectoriz handoff cl-1 --to co") == {"codex", "continue", "copilot"}
    assert candidates("trajectoriz --completion ") == set(SHELLS)


def test_a_value_nothing_completes_gets_no_candidates(candidates):
    assert not candidates("trajectoriz show --step ")


def test_every_command_and_option_of_the_parser_is_offered():
    """From the parser itself: the bash script names every command and every option string."""
    import trajectoriz

    parser = trajectoriz.build_parser()
    script = subprocess.run([sys.executable, os.path.join(ROOT, "trajectoriz.py"), "--completion", "bash"],
                            capture_output=True, text=True, check=True).stdout
    for name, command in parser.subcommands.items():
        branch = script.split(f"\n        {name})\n", 1)[1].split("\n            ;;", 1)[0]
        for action in command._actions:
            for option in action.option_strings:
                assert f" {option}" in branch or f'"{option}' in branch, (name, option)


def test_complete_ids_lists_the_current_projects_sessions_newest_first(setup):
    env, project, _, ids = setup
    done = cli("complete-ids", env=env, cwd=project)
    assert done.returncode == 0 and not done.stderr
    lines = done.stdout.decode().splitlines()
    assert [line.split("\t")[0] for line in lines] == ids
    assert all(" claude: SCENARIO claude-" in line for line in lines if line.startswith("cl-"))
    assert cli("complete-ids", env=env, cwd=env["HOME"]).stdout == b""  # a folder without sessions


def install_lines() -> dict[str, str]:
    """README's install command of each shell (its table in the Install section)."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text[text.index("\n### Shell completion\n"):].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (bash|zsh|fish)\b.*? \| `(mkdir [^`]+)`", section, re.M)
    return dict(rows)


def test_the_install_lines_of_readme_and_the_man_page_write_the_scripts(setup, tmp_path):
    env, project, _, _ = setup
    lines = install_lines()
    assert set(lines) == set(SHELLS)
    page = cli("--man", env=env).stdout.decode().replace("\\-", "-")
    home = tmp_path / "home"
    for shell, line in lines.items():
        assert line in page
        done = subprocess.run(["sh", "-c", line], env={**env, "HOME": str(home)}, cwd=project, capture_output=True)
        assert done.returncode == 0, done.stderr
        written = line.rsplit("> ", 1)[1].replace("~", str(home), 1)
        assert open(written, "rb").read() == cli("--completion", shell, env=env).stdout
