"""`pip install .` and `pipx install .` (pyproject.toml), as a newcomer does them: from a fresh
`git clone` of the repository with nothing built (no pyi-work/, no dist/), the wheel built as pip
builds it (offline: `pip wheel --no-build-isolation`), installed into a fresh virtualenv with its
dependencies (from the package index, as pipx does) beside a foreign distribution that owns the
generic top-level names `core` and `commands`, and its two commands run from a project
elsewhere: they print what the source tree prints. Everything installs under one name,
site-packages/trajectoriz/. The pins come from requirements-runtime.txt, the one place they are
written.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from helpers import ROOT, cli
from core.version import VERSION

sys.path.insert(0, os.path.join(ROOT, "examples"))
import demo  # noqa: E402  (stages the example store the way `make demo` does)

NOT_SHIPPED = {"tests", "bench", "build", "conformance", "examples", "dist", "pyi-work"}
FOREIGN = ("core", "commands")  # generic names other distributions use too
OURS_GENERIC = ("core", "commands", "mount", "agents", "atif", "discovery", "rendering", "archiving", "sharing",
                "redaction")


def runtime_pins() -> list[str]:
    with open(os.path.join(ROOT, "requirements-runtime.txt"), encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip() and not line.startswith("#")]


def test_everything_installs_under_one_name_and_every_package_is_listed():
    """The root holds trajectoriz.py alone; pyproject.toml lists every folder with an __init__.py
    but those that do not ship, each under the one package `trajectoriz` (the root)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        setuptools = tomllib.load(handle)["tool"]["setuptools"]
    assert [os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "*.py"))] == ["trajectoriz.py"]
    assert setuptools["package-dir"] == {"trajectoriz": "."}
    folders = {os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(ROOT, "*", "__init__.py"))}
    assert not glob.glob(os.path.join(ROOT, "*", "*", "__init__.py"))  # no sub-packages to list
    assert sorted(setuptools["packages"]) == sorted(["trajectoriz"] + [f"trajectoriz.{name}"
                                                                        for name in folders - NOT_SHIPPED])


def test_requirements_txt_pins_the_runtime_ones_by_including_them():
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert "-r requirements-runtime.txt" in lines
    names = {re.split(r"[=<>]", pin)[0] for pin in runtime_pins()}
    assert names == {"orjson", "mfusepy", "zstandard"}
    assert not any(re.split(r"[=<>]", line)[0] in names for line in lines)  # pinned once
    assert all("==" in pin for pin in runtime_pins())


def git(*args: str, cwd: str = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          timeout=120).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh `git clone` of this repository at this work tree's commit, with the work tree's
    changes not yet committed laid over it (so that the test checks the tree it runs in): what a
    newcomer has after cloning, nothing built."""
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("the source tree is not a git work tree: nothing to clone")
    folder = str(tmp_path_factory.mktemp("clone") / "trajectoriz")
    git("clone", "-q", "--no-checkout", ROOT, folder)
    git("checkout", "-q", git("rev-parse", "HEAD").strip(), cwd=folder)
    for rel in filter(None, git("ls-files", "-z", "--modified", "--others", "--exclude-standard").split("\0")):
        source, target = os.path.join(ROOT, rel), os.path.join(folder, rel)
        if os.path.lexists(source):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target)
        elif os.path.lexists(target):
            os.remove(target)
    assert os.path.exists(os.path.join(folder, "trajectoriz.py"))
    assert not {"pyi-work", "dist", ".venv", "trajectoriz.1"} & set(os.listdir(folder))  # nothing built
    return folder


@pytest.fixture(scope="module")
def wheel(clone, tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(out), clone], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    [path] = glob.glob(str(out / "*.whl"))
    return path


def foreign_wheel(folder: str) -> str:
    """A distribution of someone else's that owns the top-level packages FOREIGN."""
    info = "foreign_generic-1.0.dist-info"
    files = {f"{name}/__init__.py": 'OWNER = "foreign"\n' for name in FOREIGN}
    files[f"{info}/METADATA"] = "Metadata-Version: 2.1\nName: foreign-generic\nVersion: 1.0\n"
    files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    path = os.path.join(folder, "foreign_generic-1.0-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh virtualenv holding the foreign distribution first, then ours."""
    folder = tmp_path_factory.mktemp("venv")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    for package in (foreign_wheel(str(folder)), wheel):
        installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                    "--disable-pip-version-check", package], capture_output=True, text=True,
                                   timeout=300)
        assert installed.returncode == 0, installed.stderr
    return venv


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """The example store in a project; an environment with no virtualenv on PATH."""
    env, project = demo.stage(str(tmp_path_factory.mktemp("store")))
    env = {"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
           "TZ": "UTC", "LANG": "C.UTF-8"}
    return env, project


def test_the_wheel_depends_on_the_pinned_runtime_packages_and_has_both_commands(wheel):
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(info).decode()
        scripts = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
        names = archive.namelist()
    assert re.findall(r"^Requires-Dist: (.*)$", metadata, re.M) == runtime_pins()
    assert ("trajectoriz = trajectoriz.trajectoriz:main" in scripts
            and "trajectoriz-cli = trajectoriz.trajectoriz:main" in scripts)
    assert {"trajectoriz/trajectoriz.py", "trajectoriz/agents/claude.py", "trajectoriz/atif/validate.py",
            "trajectoriz/commands/completion.py", "trajectoriz/core/version.py",
            "trajectoriz/trajectoriz.1"} <= set(names)
    info = f"trajectoriz-{VERSION}.dist-info/"
    assert [n for n in names if not n.startswith(("trajectoriz/", info))] == []  # one top-level name
    assert not [n for n in names if n.startswith(tuple(f"trajectoriz/{name}/" for name in NOT_SHIPPED))]


def test_installed_in_a_fresh_virtualenv_both_commands_work_as_the_source_tree(venv, staged):
    env, project = staged

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
    assert same_as_source("trajectoriz", "--man").startswith(b".TH TRAJECTORIZ")  # the page the wheel carries


def test_a_foreign_core_and_commands_keep_working_beside_it(venv):
    """Installed after a distribution that owns `core` and `commands`, ours changes none of its
    files (pip would have written over its __init__.py), and nothing of ours is importable under
    a generic name from another program's Python in the same environment."""
    probe = ("import importlib.util, core, commands; print(core.OWNER, commands.OWNER); "
             f"print([n for n in {OURS_GENERIC[2:]!r} if importlib.util.find_spec(n)])")
    seen = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, cwd="/",
                          timeout=60)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout == "foreign foreign\n[]\n"
    [record] = glob.glob(str(venv / "lib" / "python*" / "site-packages" / f"trajectoriz-{VERSION}.dist-info" / "RECORD"))
    with open(record, encoding="utf-8") as handle:
        paths = [line.split(",")[0] for line in handle.read().splitlines()]
    assert [p for p in paths if not p.startswith(("trajectoriz/", f"trajectoriz-{VERSION}.dist-info/", "../"))] == []


def test_man_without_a_page_is_one_line(venv, staged):
    """A wheel built without argparse-manpage has no page: `--man` says so in one line, exit 2."""
    env, project = staged
    [page] = glob.glob(str(venv / "lib" / "python*" / "site-packages" / "trajectoriz" / "trajectoriz.1"))
    os.rename(page, page + ".away")
    try:
        done = subprocess.run([str(venv / "bin" / "trajectoriz"), "--man"], env=env, cwd=project,
                              capture_output=True, text=True, timeout=60)
    finally:
        os.rename(page + ".away", page)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("trajectoriz: no manual page here: ") and done.stderr.count("\n") == 1


def test_memory_readme_names_the_installed_program_as_the_user_runs_it(venv, staged, tmp_path):
    """export's README.md (the mount's too) tells the agent what to type: `trajectoriz` where that
    name on PATH is this install's console script, else that script's path; never Python and a
    file inside site-packages."""
    env, project = staged
    script = str(venv / "bin" / "trajectoriz")
    for path, shown in ((f"{venv / 'bin'}:/usr/bin:/bin", "trajectoriz"), ("/usr/bin:/bin", script)):
        out = tmp_path / shown.replace("/", "_")
        done = subprocess.run([script, "export", "--out", str(out)], env={**env, "PATH": path}, cwd=project,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        readme = (out / "README.md").read_text()
        assert f"trajectoriz is run here as `{shown}`" in readme
        assert f"\n    {shown} search --local " in readme
        assert "site-packages" not in readme and "bin/python" not in readme


def test_a_clone_is_named_by_its_python_and_script_though_another_trajectoriz_is_on_path(staged, tmp_path):
    """In a clone, `trajectoriz` on PATH may be another program (a release, an older install):
    the README then names this one, the clone's Python and trajectoriz.py."""
    import shlex

    env, project = staged
    other = tmp_path / "bin"
    other.mkdir()
    (other / "trajectoriz").write_text("#!/bin/sh\necho another trajectoriz\n")
    (other / "trajectoriz").chmod(0o755)
    out = tmp_path / "out"
    done = cli("export", "--out", str(out), env={**env, "PATH": f"{other}:/usr/bin:/bin"}, cwd=project)
    assert done.returncode == 0, done.stderr
    me = f"{shlex.quote(sys.executable)} {shlex.quote(os.path.join(ROOT, 'trajectoriz.py'))}"
    assert f"trajectoriz is run here as `{me}`" in (out / "README.md").read_text()
