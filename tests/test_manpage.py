"""The help a user reads: every command and option explains itself, and `man ./trajectoriz.1`
(written by `make man` from the real parser) renders every command and option."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT

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
    if not shutil.which("man"):
        pytest.skip("man is not installed")
    page = tmp_path_factory.mktemp("man") / "trajectoriz.1"
    subprocess.run([sys.executable, os.path.join(ROOT, "build", "manpage.py"), "--output", str(page)],
                   check=True)
    result = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True, text=True,
                            env={"PATH": os.environ["PATH"], "MANWIDTH": "200",
                                 "LANG": "C.UTF-8"}, check=True)
    return result.stdout, result.stderr


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
