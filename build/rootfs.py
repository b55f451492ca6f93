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


def busybox(root: str) -> str:
    """`root` holding a static busybox and links to its applets, /tmp, and mount points for
    /proc and /dev."""
    source = static_busybox()
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


def debootstrap(suite: str, include: tuple = ("fuse3",)) -> str:
    """pyi-work/rootfs/<suite>: a minimal Debian of that release, made once."""
    target = os.path.join(CACHE, suite)
    if os.path.exists(os.path.join(target, ".complete")):
        return target
    if not shutil.which("debootstrap"):
        raise RuntimeError("no debootstrap (apt-get install debootstrap)")
    partial = target + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(CACHE, exist_ok=True)
    made = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(include)}", suite,
                           partial, MIRROR], capture_output=True, text=True)
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
