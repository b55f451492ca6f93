"""The conformance runner's choice of versions for `VERSIONS=latest` (conformance/run.py), with
the registry's answers as Kilo's were on 2026-12-01: `@kilocode/cli@7.8.1` needs a linux-x64
package of 7.8.1 the registry does not serve, while `@kilocode/cli-linux-x64` has 7.7.9. Nothing
here asks a registry or installs anything."""

import os

from conformance import run
from conformance.drivers import DRIVERS

KILO = {"@kilocode/cli": ["7.7.2", "7.7.5", "7.7.7", "7.8.1"], "@kilocode/cli-linux-x64": ["7.0.33", "7.7.2", "7.7.7", "7.7.9"]}


def test_the_newest_releases_of_the_package_and_its_binary_package_newest_first(monkeypatch):
    monkeypatch.setattr(run, "npm_versions", KILO.__getitem__)
    monkeypatch.setattr(run, "npm_platform", lambda: "linux-x64")
    kilo = DRIVERS["kilo"]
    assert [c.label(kilo) for c in run.candidates(kilo)] == ["7.8.1", "@kilocode/cli-linux-x64@7.7.9", "7.7.7"]
    assert run.candidates(kilo)[2].package == "@kilocode/cli"   # where both have 7.7.7, the wrapper


def test_version_order_is_numeric():
    assert sorted(["7.10.0", "7.9.1", "7.9.10", "10.0"], key=run.version_key) == ["7.9.1", "7.9.10", "7.10.0", "10.0"]


def test_a_binary_package_is_linked_where_npm_puts_commands(tmp_path):
    kilo = DRIVERS["kilo"]
    package = tmp_path / "node_modules" / "@kilocode" / "cli-linux-x64" / "bin"
    package.mkdir(parents=True)
    (package / "kilo").write_text("#!/bin/sh\n")
    run.link_binary(kilo, run.Candidate("7.7.9", "@kilocode/cli-linux-x64"), str(tmp_path))
    assert os.path.realpath(tmp_path / "node_modules" / ".bin" / "kilo") == str(package / "kilo")
