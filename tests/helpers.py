"""Shared test helpers: fake homes built from the fixture stores, and the CLI run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SAMPLES = os.path.join(FIXTURES, "samples")
LIVE = os.path.join(SAMPLES, "live")
SCHEMA = os.path.join(FIXTURES, "atif", "atif-v1.7.schema.json")


def base_env(tmp_path, home: str | None = None) -> dict:
    """An environment whose $HOME and caches are the test's own."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TZ": "UTC", "LANG": "C.UTF-8",
           "HOME": home or str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    os.makedirs(env["HOME"], exist_ok=True)
    return env


def copy_into(home: str, source: str, target: str) -> str:
    """Copy a fixture file or folder to `home/target`; returns the copy's path."""
    destination = os.path.join(home, target)
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    if os.path.isdir(source):
        shutil.copytree(source, destination, dirs_exist_ok=True)
    else:
        shutil.copy2(source, destination)
    return destination


def cli(*args: str, env: dict, cwd: str | None = None, timeout: float = 120,
        stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run `trajectoriz.py` as a user would, in its own process."""
    return subprocess.run([sys.executable, os.path.join(ROOT, "trajectoriz.py"), *args],
                          env=env, cwd=cwd or env["HOME"], capture_output=True, timeout=timeout,
                          input=stdin)


def schema_validator():
    jsonschema = pytest.importorskip("jsonschema")
    import json

    with open(SCHEMA) as handle:
        return jsonschema.Draft202012Validator(json.load(handle))


def harbor_errors(doc: dict) -> list[str]:
    """Harbor's own verdict on a document (its validator is the reference)."""
    from harbor.utils.trajectory_validator import TrajectoryValidator

    validator = TrajectoryValidator()
    validator.validate(doc, validate_images=False)
    return validator.get_errors()


def assert_valid(doc: dict) -> None:
    """A produced document passes our validator, the JSON Schema and Harbor's validator."""
    from atif.validate import validate

    errors, _ = validate(doc)
    assert errors == [], errors
    schema_errors = [e.message for e in schema_validator().iter_errors(doc)]
    assert schema_errors == [], schema_errors[:5]
    assert harbor_errors(doc) == []


GOLDEN = os.path.join(ROOT, "tests", "golden")


def assert_golden(doc: dict, agent: str, name: str) -> None:
    """`doc` equals `tests/golden/<agent>/<name>.atif.json`. With UPDATE_GOLDEN=1 in the
    environment the file is (re)written instead: read the diff through before committing it."""
    from atif.serialize import dumps

    path = os.path.join(GOLDEN, agent, f"{name}.atif.json")
    data = dumps(doc)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    with open(path, "rb") as handle:
        expected = handle.read()
    assert data == expected, f"{path} differs (UPDATE_GOLDEN=1 rewrites it)"


def file_states(root: str) -> dict:
    """Every file under `root` -> (bytes, mtime_ns): what must not change when we only read."""
    states = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                states[path] = (handle.read(), os.stat(path).st_mtime_ns)
    return states


def assert_clear(result: subprocess.CompletedProcess) -> None:
    """A command succeeded (for search, exit 1 is a success that found nothing), or said what
    is wrong on one line and exited non-zero: never a traceback, never a wall of text."""
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    found_nothing = result.returncode == 1 and "search" in result.args and not stderr
    if result.returncode != 0 and not found_nothing:
        assert len(stderr.strip().splitlines()) == 1, stderr
