"""`pip install .` and `pipx install .` (pyproject.toml): the wheel is built from the source tree
as pip builds it (offline: `pip wheel --no-build-isolation`), installed into a fresh virtualenv
with its dependencies (from the package index, as pipx does), and its two commands run from a
project elsewhere: they print what the source tree prints. The pins come from
requirements-runtime.txt, the one place they are written.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile

import pytest

from helpers import ROOT, cli
from core.version import VERSION

sys.path.insert(0, os.path.join(ROOT, "examples"))
import demo  # noqa: E402  (stages the example store the way `make demo` does)


def runtime_pins() -> list[str]:
    with open(os.path.join(ROOT, "requirements-runtime.txt"), encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip() and not line.startswith("#")]


def test_every_module_at_the_root_is_packaged():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        listed = tomllib.load(handle)["tool"]["setuptools"]["py-modules"]
    assert sorted(listed) == sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "*.py")))


def test_requirements_txt_pins_the_runtime_ones_by_including_them():
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert "-r requirements-runtime.txt" in lines
    names = {re.split(r"[=<>]", pin)[0] for pin in runtime_pins()}
    assert names == {"orjson", "mfusepy", "zstandard"}
    assert not any(re.split(r"[=<>]", line)[0] in names for line in lines)  # pinned once
    assert all("==" in pin for pin in runtime_pins())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(out), ROOT], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    [path] = glob.glob(str(out / "*.whl"))
    return path


def test_the_wheel_depends_on_the_pinned_runtime_packages_and_has_both_commands(wheel):
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(info).decode()
        scripts = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
        names = archive.namelist()
    assert re.findall(r"^Requires-Dist: (.*)$", metadata, re.M) == runtime_pins()
    assert "trajectoriz = trajectoriz:main" in scripts and "trajectoriz-cli = trajectoriz:main" in scripts
    assert {"trajectoriz.py", "agents/claude.py", "atif/validate.py", "commands/completion.py",
            "core/version.py"} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "bench/", "build/", "conformance/", "examples/"))]


def test_installed_in_a_fresh_virtualenv_both_commands_work_as_the_source_tree(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                "--disable-pip-version-check", wheel], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    env, project = demo.stage(str(tmp_path / "store"))
    env = {"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
           "TZ": "UTC", "LANG": "C.UTF-8"}

    def same_as_source(program: str, *args: str) -> bytes:
        done = subprocess.run([str(venv / "bin" / program), *args], env=env, cwd=project, capture_output=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        source = cli(*args, env=env, cwd=project)
        assert (done.stdout, done.stderr) == (source.stdout, source.stderr)
        return done.stdout

    assert same_as_source("trajectoriz", "--version") == b"trajectoriz " + VERSION.encode() + b"\n"
    listed = [json.loads(line) for line in same_as_source("trajectoriz", "list", "--json").splitlines()]
    assert len(listed) == 12
    assert same_as_source("trajectoriz", "show", listed[0]["id"]).startswith(b"{")
    assert same_as_source("trajectoriz-cli", "search", "note")
    assert same_as_source("trajectoriz", "stats", "--json")
