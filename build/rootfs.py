"""Root file systems made on the spot, to run the release binary where a user's machine or a CI
container would (tests/test_binary.py, tests/test_release.py; `make release-check`):

- `busybox(root)`: nothing but a static busybox (Debian's busybox-static) and its applets: no C
  library, no loader, as in a `FROM busybox` container;
- `debootstrap(suite)`: a minimal Debian (`debootstrap --variant=minbase`, with fuse3), e.g.
  bullseye (Debian 11, glibc 2.31) and bookworm (Debian 12, the build's own), made once into
  pyi-work/rootfs/<suite> (about a minute each from deb.debian.org);
- `run(root, argv, env, binds)`: runs a command chrooted into `root`, in a mount namespace of
  its own (unshare) holding /proc, the host's /dev (/dev/fuse included) and the host folders
  `binds` at the same paths: the test's project, store and cache, so that the binary inside and
  `python trajectoriz.py` outside print the same paths. Nothing is left mounted afterwards.

Needs root (chroot, mount), unshare (util-linux); debootstrap for the Debian ones.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, "pyi-work", "rootfs")
MIRROR = "http://deb.debian.org/debian"
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"


def is_static(path: str) -> bool:
    """An ELF without a program interpreter: it needs no loader and no C library."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != b"\x7fELF":
                return False
    except OSError:
        return False
    headers = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    return "INTERP" not in headers


def static_busybox() -> str | None:
    return next((p for p in BUSYBOX_CANDIDATES if os.path.exists(p) and is_static(p)), None)


def missing() -> str | None:
    """Why root file systems cannot be used here, or None."""
    if os.geteuid() != 0:
        return "chroot needs root"
    if not shutil.which("unshare") or not shutil.which("chroot"):
        return "no unshare or chroot (apt-get install util-linux coreutils)"
    if not shutil.which("readelf"):
        return "no readelf (apt-get install binutils)"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    if probe.returncode != 0:
        return "cannot make a mount namespace (unshare -m): " + probe.stderr.decode().strip()
    return None


def busybox(root: str, source: str | None = None) -> str:
    """`root` holding a static busybox (the host's, else `source`: another machine's, run
    through emulation) and links to its applets, /tmp, and mount points for /proc and /dev."""
    source = source or static_busybox()
    if source is None:
        raise RuntimeError("no static busybox (apt-get install busybox-static)")
    for folder in ("bin", "proc", "dev", "tmp", "root"):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy2(source, os.path.join(root, "bin", "busybox"))
    listed = subprocess.run([source, "--list"], capture_output=True, text=True, check=True).stdout
    for applet in listed.split():
        link = os.path.join(root, "bin", applet)
        if applet != "busybox" and not os.path.lexists(link):
            os.symlink("busybox", link)
    return root


DEBIAN_ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}  # machine (uname -m) -> Debian's name


def emulation_missing(machine: str) -> str | None:
    """Why programs for `machine` cannot run on this one, or None: they run natively, or through
    qemu-user-static's handler in binfmt_misc (mounted here first where it is not). The handler
    must have the F flag, so that qemu is found from inside a root file system without a copy."""
    if platform.machine() == machine:
        return None
    folder = "/proc/sys/fs/binfmt_misc"
    if not os.path.exists(os.path.join(folder, "register")) and os.geteuid() == 0:
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", folder], capture_output=True)
    entry = os.path.join(folder, f"qemu-{machine}")
    if not os.path.exists(entry) and shutil.which("update-binfmts"):
        subprocess.run(["update-binfmts", "--enable", f"qemu-{machine}"], capture_output=True)
    try:
        with open(entry, encoding="utf-8") as handle:
            said = handle.read()
    except OSError:
        return f"no emulator for {machine} (apt-get install qemu-user-static binfmt-support; needs root)"
    if not said.startswith("enabled") or not re.search(r"^flags: \w*F", said, re.M):
        return f"{entry} is not enabled with the F flag (update-binfmts --enable qemu-{machine})"
    return None


def debootstrap(suite: str, include: tuple = ("fuse3",), arch: str | None = None) -> str:
    """pyi-work/rootfs/<suite>: a minimal Debian of that release, made once; for another
    architecture (Debian's name: arm64), <suite>-<arch>, its programs run by qemu-user-static
    through binfmt_misc (`emulation_missing` says what is missing for it)."""
    target = os.path.join(CACHE, f"{suite}-{arch}" if arch else suite)
    if os.path.exists(os.path.join(target, ".complete")):
        return target
    if not shutil.which("debootstrap"):
        raise RuntimeError("no debootstrap (apt-get install debootstrap)")
    partial = target + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(CACHE, exist_ok=True)
    made = subprocess.run(["debootstrap", "--variant=minbase", *([f"--arch={arch}"] if arch else []),
                           f"--include={','.join(include)}", suite, partial, MIRROR], capture_output=True, text=True)
    if made.returncode != 0:
        raise RuntimeError(f"debootstrap {suite} failed: {made.stdout[-2000:]}{made.stderr[-2000:]}")
    shutil.rmtree(target, ignore_errors=True)
    os.rename(partial, target)
    open(os.path.join(target, ".complete"), "w").close()
    return target


SCRIPT = r"""
set -e
inner_path=$PATH
PATH=/usr/sbin:/usr/bin:/sbin:/bin
chroot=$(command -v chroot)
root=$1; shift
count=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
while [ "$count" -gt 0 ]; do
    mkdir -p "$root$1"
    mount --bind "$1" "$root$1"
    shift; count=$((count - 1))
done
PATH=$inner_path
exec "$chroot" "$root" "$@"
"""


def run(root: str, argv: list[str], env: dict, binds: tuple = (), cwd: str = "/", timeout: float = 120,
        stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """`argv` run inside `root` (as root, with exactly `env`), from `cwd` inside it."""
    inner = ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", cwd, *argv]
    return subprocess.run(["unshare", "-m", "--propagation", "private", "/bin/sh", "-c", SCRIPT, "sh",
                           root, str(len(binds)), *binds, *inner],
                          env={"PATH": PATH, **env}, capture_output=True, timeout=timeout, input=stdin)
