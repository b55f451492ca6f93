"""The help a user reads: every command and option explains itself, `man ./trajectoriz.1`
(written by `make man` from the real parser) renders every command and option, and its FILES
section names every file and folder trajectoriz keeps, with its bound."""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import ROOT, needs, run_main

sys.path.insert(0, os.path.join(ROOT, "build"))
from trajectoriz import build_parser  # noqa: E402

MIN_HELP = 12  # characters: more than a word or two


def commands(parser: argparse.ArgumentParser) -> dict:
    """{name: (subparser, its one-line help)} of the top-level commands."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in action._choices_actions}
    return {name: (sub, helps.get(name)) for name, sub in action.choices.items()}


def options(parser: argparse.ArgumentParser) -> list:
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]


def test_every_command_and_option_has_help_worth_reading():
    parser = build_parser()
    thin = [a.dest for a in options(parser) if len(a.help or "") < MIN_HELP]
    for name, (sub, summary) in commands(parser).items():
        if len(summary or "") < MIN_HELP or len(sub.description or "") < 2 * MIN_HELP:
            thin.append(f"{name} (summary or description)")
        thin += [f"{name} {a.option_strings or a.metavar or a.dest}" for a in options(sub)
                 if len(a.help or "") < MIN_HELP]
    assert thin == []


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    pytest.importorskip("argparse_manpage")
    page = tmp_path_factory.mktemp("man") / "trajectoriz.1"
    subprocess.run([sys.executable, os.path.join(ROOT, "build", "manpage.py"), "--output", str(page)],
                   check=True)
    result = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True, text=True,
                            env={"PATH": os.environ["PATH"], "MANWIDTH": "200",
                                 "LANG": "C.UTF-8"}, check=True)
    return result.stdout, result.stderr


@needs("man")
def test_man_page_renders_every_command_and_option(rendered):
    text, warnings = rendered
    assert warnings == ""
    parser = build_parser()
    for name, (sub, summary) in commands(parser).items():
        assert f"COMMAND 'trajectoriz {name}'" in text
        assert summary in text
        for action in options(sub):
            for flag in action.option_strings:
                assert flag in text, f"{name} {flag}"
    for section in ("SYNOPSIS", "COMMANDS", "EXAMPLES", "ENVIRONMENT", "FILES"):
        assert f"\n{section}\n" in text


# FILES: what trajectoriz keeps ------------------------------------------------------------------------
def files_section() -> str:
    with open(os.path.join(ROOT, "build", "trajectoriz.1.include"), encoding="utf-8") as handle:
        text = handle.read()
    return text[text.index("[FILES]"):].replace("\\-", "-")


def documented(section: str) -> list[str]:
    """The names FILES gives, as patterns: its `.I` tags and the names in italics."""
    tags = [name for line in re.findall(r"^\.I (.*)$", section, re.M) for name in line.split(", ")]
    return [name.rstrip("/") for name in tags + re.findall(r"\\fI(.*?)\\fR", section)]


def kept_by_every_command(tmp_path) -> tuple[list[str], list[str]]:
    """The names in the cache folder and in the archive after every command that writes there
    has run on the example store, with the names the mount (its state and log) and the
    single-file executable (app/) would add."""
    from mount import memory

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import demo
    from rendering import doccache

    env, project = demo.stage(str(tmp_path))
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    first = json.loads(run_main(env, ["list", "--json"], cwd=project).stdout.splitlines()[0])["id"]
    for args in (["list", "--steps"], ["show", first], ["search", "--content", "note"], ["stats"],
                 ["export", "--out", str(tmp_path / "out")], ["archive"]):
        assert run_main(env, args, cwd=project).returncode in (0, 1), args
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    documents = [os.path.join(doccache.FOLDER, n) for n in os.listdir(os.path.join(cache, doccache.FOLDER))]
    point = os.path.join(project, "memory")
    names = os.listdir(cache) + documents + [memory._state_name(point), memory._log_name(point), "app"]
    data = os.path.join(env["XDG_DATA_HOME"], "trajectoriz")
    return names, [n for n in os.listdir(data) if n != "archive"] + os.listdir(os.path.join(data, "archive"))


def test_files_names_every_file_and_folder_trajectoriz_keeps(tmp_path):
    patterns = documented(files_section())
    cache, archive = kept_by_every_command(tmp_path)
    assert {"index.bin", "data", "lock"} <= set(archive) and len(cache) > 6  # everything ran
    undocumented = [n for n in cache + archive
                    if not any(fnmatch.fnmatch(os.path.basename(n), p) for p in patterns)]
    assert undocumented == []
    assert {"documents-v3-r*", "app", "mirrors"} <= set(patterns)


def test_files_gives_each_cache_its_bound_and_the_archive_its_place():
    from rendering import doccache

    section = " ".join(files_section().split())
    assert "small" not in section.lower()
    assert f"at most {doccache.LIMIT_BYTES // 1024 ** 3} GiB together" in section
    assert re.search(r"\.I \$\{XDG_DATA_HOME:-~/\.local/share\}/trajectoriz/archive/ .* no bound", section)
    for name in ("index-v5-r*-py*.bin", "facts-v6-r*-py*.bin", "exports-v1-py*.bin"):
        entry = section[section.index(f".I {name}"):].split(".TP")[0]
        assert re.search(r"about \d|one entry per", entry), name  # what it grows with


# ENVIRONMENT: every variable the agents' readers look up ---------------------------------------------
def agent_variables() -> dict:
    """{variable: [files]}: the environment variables agents/*.py read (and core/cache.py's
    `home`, which gives them $HOME), found in their
    code: `env.get("X")`, `env["X"]`, `"X" in env`, `env_dir(env, "X", ...)`, and a string
    constant naming a variable handed on to a helper (opencode's Family("opencode", "OPENCODE_DB")):
    every all-capitals name with an underscore that is not an attribute of os (O_CLOEXEC)."""
    import ast
    import glob

    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "agents", "*.py"))) + [os.path.join(ROOT, "core", "cache.py")]:
        tree = ast.parse(open(path, encoding="utf-8").read())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "get" and getattr(node.func.value, "id", None) in ("env", "environ"):
                name = node.args[0]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "env_dir" and len(node.args) > 1:
                name = node.args[1]
            elif isinstance(node, ast.Subscript) and getattr(node.value, "id", None) in ("env", "environ"):
                name = node.slice
            elif isinstance(node, ast.Compare) and any(getattr(c, "id", None) in ("env", "environ")
                                                       for c in node.comparators):
                name = node.left
            elif isinstance(node, ast.Constant) and id(node) not in docstrings and isinstance(node.value, str) \
                    and re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+", node.value) and not hasattr(os, node.value):
                name = node
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.setdefault(name.value, []).append(os.path.basename(path))
    return found


def environment_section(text: str) -> str:
    return text[text.index("\nENVIRONMENT\n"):text.index("\nFILES\n")]


@needs("man")
def test_environment_names_every_variable_the_agents_read(rendered):
    variables = agent_variables()
    assert {"CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCODE_DB", "HOME", "XDG_DATA_HOME"} <= set(variables)
    section = environment_section(rendered[0])
    assert [v for v in sorted(variables) if not re.search(rf"\b{v}\b", section)] == []
    for own in ("XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "TMPDIR", "TRAJECTORIZ_DEBUG"):  # trajectoriz's own
        assert re.search(rf"\b{own}\b", section), own


# Each command's examples and notes -------------------------------------------------------------------
def test_every_command_has_examples_of_itself():
    for name, (sub, _) in commands(build_parser()).items():
        epilog = sub.epilog or ""
        assert epilog.startswith("examples:\n"), name
        assert re.search(rf"^  trajectoriz {name}( |$)", epilog, re.M), name


@needs("man")
def test_man_page_gives_each_commands_examples_and_notes(rendered):
    text = " ".join(rendered[0].split())
    for name, (sub, _) in commands(build_parser()).items():
        assert f"EXAMPLES AND NOTES 'trajectoriz {name}'" in text
        for line in sub.epilog.splitlines():
            assert " ".join(line.split()) in text, (name, line)


def test_trajectoriz_man_prints_the_page_make_man_writes(tmp_path):
    pytest.importorskip("argparse_manpage")
    page = tmp_path / "trajectoriz.1"
    subprocess.run([sys.executable, os.path.join(ROOT, "build", "manpage.py"), "--output", str(page)], check=True)
    printed = subprocess.run([sys.executable, os.path.join(ROOT, "trajectoriz.py"), "--man"],
                             capture_output=True, check=True)
    assert printed.stdout == page.read_bytes() and printed.stdout.startswith(b".TH TRAJECTORIZ")
