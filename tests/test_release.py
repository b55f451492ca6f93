"""The release files (`make release`: dist/trajectoriz-<version>-linux-x86_64 and -linux-aarch64)
run where users and CI containers run them, in root file systems made on the spot
(build/rootfs.py): Debian 11 (glibc 2.31, older than the build host's), Debian 12 (the build's
own distribution), and one holding nothing but a static busybox (no C library at all); the
aarch64 file under emulation (qemu-user-static), in an arm64 Debian 11 and an arm64 busybox. In each, `--version`, `list`,
`show`, `search --content` and `export` print exactly what `python trajectoriz.py` prints
outside, on the bundled example store; where the host has FUSE, a real mount from inside each
Debian works, served on the C library that fits (Debian 11: the program's own, with Debian 11's
libfuse loaded into it; Debian 12: the host's).

`make release-check` runs this file (TRAJECTORIZ_RELEASE_CHECK=1; TRAJECTORIZ_RELEASE_ARCHES names
the machines whose files `make release` built, this one's by default): debootstrap takes about a
minute per Debian the first time, ten for the arm64 one (kept in pyi-work/rootfs/), so CI runs
its short mode instead, `make release-check SHORT=1` (TRAJECTORIZ_RELEASE_CHECK=short): the
busybox-only roots alone, which need no debootstrap, with this machine's release file and any
other machine's that `make release` left in dist/ (aarch64, checked under emulation in the
busybox of its build root, where both are there; else skipped, saying why).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
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

# machine -> the roots its release runs in (the suite debootstrap makes, None: busybox alone); the
# aarch64 file runs under emulation (qemu-user-static), in an arm64 Debian 11 and an arm64 busybox
ROOTS = {"x86_64": {"debian-11": "bullseye", "debian-12": "bookworm", "busybox": None},
         "aarch64": {"debian-11": "bullseye", "busybox": None}}
SHORT = os.environ.get("TRAJECTORIZ_RELEASE_CHECK") == "short"
if SHORT:  # this machine's file, and every other machine's that was built here
    MACHINES = [platform.machine()] + [machine for machine in ROOTS if machine != platform.machine()
                                       and os.path.exists(os.path.join(ROOT, "dist", pack.release_name(machine)))]
else:
    MACHINES = os.environ.get("TRAJECTORIZ_RELEASE_ARCHES", platform.machine()).split()  # what `make release` built
CASES = [(machine, name) for machine in MACHINES for name, suite in ROOTS[machine].items()
         if not SHORT or suite is None]


def release_copy(machine: str, folder) -> str:
    """A copy of `machine`'s release file, checked against its .sha256 as a user would."""
    release = os.path.join(ROOT, "dist", pack.release_name(machine))
    if not os.path.exists(release):
        pytest.fail(f"{release} is missing: run `make release`")
    with open(release + ".sha256", encoding="utf-8") as handle:
        digest, name = handle.read().split()
    with open(release, "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == digest and name == os.path.basename(release)
    shutil.copy2(release, folder / "trajectoriz")
    return str(folder / "trajectoriz")


@pytest.fixture(scope="module", params=CASES, ids=["-".join(case) for case in CASES])
def case(request, tmp_path_factory):
    """(root's name, root's path, the release copy): one machine's release, one root."""
    machine, name = request.param
    reason = rootfs.missing() or rootfs.emulation_missing(machine)
    if reason and SHORT and machine != platform.machine():
        pytest.skip(f"the {machine} file is not checked: {reason}")
    if reason:
        pytest.fail(reason)
    release = release_copy(machine, tmp_path_factory.mktemp("release"))
    suite = ROOTS[machine][name]
    arch = None if machine == platform.machine() else rootfs.DEBIAN_ARCHES[machine]
    if suite is None:
        return name, rootfs.busybox(str(tmp_path_factory.mktemp("busybox")), busybox_of(arch)), release
    return name, rootfs.debootstrap(suite, arch=arch), release


def busybox_of(arch: str | None) -> str | None:
    """The static busybox of Debian `arch`: the one its build root holds (build/cross.py); None:
    the host's."""
    if arch is None:
        return None
    import cross

    made = os.path.join(rootfs.CACHE, f"{cross.SUITE}-{arch}")
    if SHORT and not os.path.exists(os.path.join(made, ".complete")):  # no debootstrap in the short mode
        pytest.skip(f"no {arch} build root in {rootfs.CACHE} to take a static busybox from (make release)")
    return os.path.join(rootfs.debootstrap(cross.SUITE, cross.PACKAGES, arch=arch), "bin", "busybox")


@pytest.fixture
def store(tmp_path):
    workdir = str(tmp_path / "store")
    env, project = demo.stage(workdir)
    env = {"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
           "TMPDIR": os.path.join(workdir, "tmp"), "TZ": "UTC", "LANG": "C.UTF-8"}
    os.mkdir(env["TMPDIR"], 0o700)
    return env, project, workdir


def test_commands_print_what_the_source_tree_prints(case, store, tmp_path):
    name, path, release = case
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
    assert len(os.listdir(os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app"))) == 1  # unpacked once
    for entry in [n for n in os.listdir(out) if (out / n).is_file()]:
        frozen, source = (out / entry).read_bytes(), (reference / entry).read_bytes()
        if entry == "README.md":  # each names the program as the user runs it (core/invocation.py)
            source = source.replace(invocation.shown_command().encode(), release.encode())
        assert frozen == source, (name, entry)


MOUNT_SCRIPT = r"""
set -e
program=$1 point=$2
"$program" memory "$point" >/dev/null
pid=$("$program" memory --status "$point" | sed -n 's/.*server pid \([0-9]*\).*/\1/p')
echo "exe $(readlink /proc/$pid/exe)"
tr '\0' '\n' < /proc/$pid/cmdline | head -n 2 | sed 's/^/argument /'
awk '{print $6}' /proc/$pid/maps | grep -E '/lib(fuse|c\.so)' | sort -u | sed 's/^/mapped /'
grep -rl SCENARIO "$point" | grep -c '\.atif\.json$' | sed 's/^/found /'  # INDEX.md holds it too
"$program" memory --unmount "$point" >/dev/null
grep -c " $point " /proc/self/mountinfo | sed 's/^/left /' || true
"""


def test_a_mount_works_where_the_host_has_fuse(case, store, tmp_path):
    name, path, release = case
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
    if os.path.basename(exe).startswith("qemu-"):  # emulated: binfmt_misc gave qemu the program's path
        exe = re.findall(r"^argument (.*)$", said, re.M)[1]
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


@pytest.mark.parametrize("machine", MACHINES)
def test_build_readme_states_the_floor_of_each_release(machine, tmp_path):
    """objdump over every ELF of the release file (the host's reads either machine's), against
    what build/README.md says of that machine's file (tests/test_binary.py checks this host's)."""
    import glibc_floor
    import ownlibc

    measured = glibc_floor.measure_any(release_copy(machine, tmp_path))
    carried = measured["carried"]
    assert not carried["lacking"] and ownlibc.ABIS[machine][0] in carried["files"]
    if machine == platform.machine():
        return
    text = " ".join(open(os.path.join(ROOT, "build", "README.md"), encoding="utf-8").read().split())
    stated = re.search(rf"glibc floor \({machine}\): none: the release carries glibc (\S+?), and needs Linux "
                       r"(\S+) or later.*?host's C library it needs glibc (\S+) or later", text)
    assert stated and stated.groups() == (carried["glibc"], carried["kernel"], measured["host_glibc_floor"])
