"""The release file (`make release`: dist/trajectoriz-<version>-linux-x86_64) run where users and
CI containers run it, in root file systems made on the spot (build/rootfs.py): Debian 11
(glibc 2.31, older than the build host's), Debian 12 (the build's own distribution), and one
holding nothing but a static busybox (no C library at all). In each, `--version`, `list`,
`show`, `search --content` and `export` print exactly what `python trajectoriz.py` prints
outside, on the bundled example store; where the host has FUSE, a real mount from inside each
Debian works, served on the C library that fits (Debian 11: the program's own, with Debian 11's
libfuse loaded into it; Debian 12: the host's).

`make release-check` runs this file (TRAJECTORIZ_RELEASE_CHECK=1): debootstrap takes about a
minute per Debian the first time (kept in pyi-work/rootfs/), so it is not part of CI, which
runs the busybox root in tests/test_binary.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT, cli

sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "build"))
import demo  # noqa: E402
from core import invocation  # noqa: E402
import pack  # noqa: E402
import rootfs  # noqa: E402

pytestmark = pytest.mark.skipif(not os.environ.get("TRAJECTORIZ_RELEASE_CHECK"),
                                reason="run by `make release-check` (root file systems made with debootstrap)")

RELEASE = os.path.join(ROOT, "dist", pack.release_name())
ROOTS = {"debian-11": "bullseye", "debian-12": "bookworm", "busybox": None}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A copy of the release file, checked against its .sha256 as a user would."""
    if not os.path.exists(RELEASE):
        pytest.fail(f"{RELEASE} is missing: run `make release`")
    with open(RELEASE + ".sha256", encoding="utf-8") as handle:
        digest, name = handle.read().split()
    with open(RELEASE, "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == digest and name == os.path.basename(RELEASE)
    folder = tmp_path_factory.mktemp("release")
    shutil.copy2(RELEASE, folder / "trajectoriz")
    return str(folder / "trajectoriz")


@pytest.fixture(scope="module", params=list(ROOTS))
def root(request, tmp_path_factory):
    reason = rootfs.missing()
    if reason:
        pytest.fail(reason)
    suite = ROOTS[request.param]
    if suite is None:
        return request.param, rootfs.busybox(str(tmp_path_factory.mktemp("busybox")))
    return request.param, rootfs.debootstrap(suite)


@pytest.fixture
def store(tmp_path):
    workdir = str(tmp_path / "store")
    env, project = demo.stage(workdir)
    env = {"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
           "TMPDIR": os.path.join(workdir, "tmp"), "TZ": "UTC", "LANG": "C.UTF-8"}
    os.mkdir(env["TMPDIR"], 0o700)
    return env, project, workdir


def test_commands_print_what_the_source_tree_prints(release, root, store, tmp_path):
    name, path = root
    env, project, workdir = store
    binds = (os.path.dirname(release), workdir, str(tmp_path))
    listed = [json.loads(line) for line in cli("list", "--all", "--json", env=env, cwd=project).stdout.splitlines()]
    assert len(listed) > 3
    commands = [["--version"], ["list"], ["list", "--all", "--json"], ["show", listed[0]["id"]],
                ["show", listed[1]["id"], "--markdown"], ["search", "--content", "SCENARIO-DONE"],
                ["search", "--content", "SCENARIO-DONE", "--json"], ["stats", "--json"]]
    for args in commands:
        frozen = rootfs.run(path, [release, *args], env, binds=binds, cwd=project)
        source = cli(*args, env=env, cwd=project)
        assert (frozen.returncode, frozen.stdout, frozen.stderr) == (0, source.stdout, source.stderr), (name, args)
    out, reference = tmp_path / "exported", tmp_path / "reference"
    exported = rootfs.run(path, [release, "export", "--all", "--out", str(out)], env, binds=binds, cwd=project)
    assert exported.returncode == 0, exported.stderr
    assert cli("export", "--all", "--out", str(reference), env=env, cwd=project).returncode == 0
    assert sorted(os.listdir(out)) == sorted(os.listdir(reference))
    app = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app")
    [app_id] = os.listdir(app)
    for entry in os.listdir(out):
        frozen, source = (out / entry).read_bytes(), (reference / entry).read_bytes()
        if entry == "README.md":  # each names the command that runs it again (core/invocation.py)
            source = source.replace(invocation.shown_command().encode(),
                                    os.path.join(app, app_id, "trajectoriz").encode())
        assert frozen == source, (name, entry)


MOUNT_SCRIPT = r"""
set -e
program=$1 point=$2
"$program" memory "$point" >/dev/null
pid=$("$program" memory --status "$point" | sed -n 's/.*server pid \([0-9]*\).*/\1/p')
echo "exe $(readlink /proc/$pid/exe)"
awk '{print $6}' /proc/$pid/maps | grep -E '/lib(fuse|c\.so)' | sort -u | sed 's/^/mapped /'
grep -rl SCENARIO "$point" | wc -l | sed 's/^ */found /'
"$program" memory --unmount "$point" >/dev/null
grep -c " $point " /proc/self/mountinfo | sed 's/^/left /' || true
"""


def test_a_mount_works_where_the_host_has_fuse(release, root, store, tmp_path):
    name, path = root
    if name == "busybox":
        pytest.skip("no libfuse in a busybox-only root (tests/test_binary.py checks what it says there)")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("the host has no /dev/fuse")
    env, project, workdir = store
    binds = (os.path.dirname(release), workdir, str(tmp_path))
    point = os.path.join(project, "memory")
    done = rootfs.run(path, ["/bin/sh", "-c", MOUNT_SCRIPT, "sh", release, point], env, binds=binds,
                      cwd=project, timeout=300)
    assert done.returncode == 0, (done.stdout, done.stderr)
    said = done.stdout.decode()
    exe = re.search(r"^exe (.*)$", said, re.M).group(1)
    mapped = re.findall(r"^mapped (.*)$", said, re.M)
    app = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app")
    exported = tmp_path / "exported"
    assert cli("export", "--out", str(exported), env=env, cwd=project).returncode == 0
    sessions = len([n for n in os.listdir(exported) if n.endswith(".atif.json")])
    assert f"found {sessions}\n" in said and sessions > 0
    assert "left 0" in said
    fuse = [m for m in mapped if "libfuse" in m]
    assert fuse and not any(m.startswith(app) for m in fuse)  # the system's libfuse, never ours
    libc = [m for m in mapped if "libc.so" in m]
    if name == "debian-11":  # glibc 2.31: the program's own C library, with Debian 11's libfuse in it
        assert os.path.basename(exe) == "trajectoriz" and libc and all(m.startswith(app) for m in libc)
    else:  # glibc 2.36: the mount switched to the host's C library
        assert os.path.basename(exe) == "trajectoriz-host-libc" and libc and not any(m.startswith(app) for m in libc)
