"""The single file for another machine than this one (`make release` builds the linux-aarch64
file this way on x86_64; `make release ARCH=aarch64` builds it alone), under emulation:

- qemu-user-static runs that machine's programs through binfmt_misc (rootfs.emulation_missing);
- a Debian 12 root file system of that machine (debootstrap, made once into
  pyi-work/rootfs/bookworm-arm64) holds its Python 3.11, binutils and a static busybox, and a
  virtualenv with requirements.txt installed (made again when the requirements change);
- inside it, on this source tree (bound at the same path), run exactly what `make build` and
  `make release` run here: PyInstaller with build/trajectoriz.spec, build/pack.py (the program
  gets that Debian's loader and C library, build/ownlibc.py) and the glibc floor.

Writes dist/<machine>/trajectoriz (and its trajectoriz-cli link), and with --release
dist/trajectoriz-<version>-linux-<machine> and its .sha256. The page's date and the tar's times
come from SOURCE_DATE_EPOCH, the last commit's time unless set, so that the same sources give the
same file. Needs root (chroot, mount), debootstrap, qemu-user-static and binfmt-support.

    python build/cross.py [--release] [MACHINE]     (MACHINE: aarch64, the default)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys

import rootfs

ROOT = rootfs.ROOT
SUITE = "bookworm"  # Debian 12: glibc 2.36 and Python 3.11, as the x86_64 build host
PACKAGES = ("python3", "python3-venv", "libpython3.11", "binutils", "busybox-static", "ca-certificates")
VENV = "/opt/trajectoriz-venv"
HOST_CERTIFICATES = "/etc/ssl/certs/ca-certificates.crt"  # pip inside uses the host's (a proxy's CA)
REQUIREMENTS = ("requirements.txt", "requirements-runtime.txt")
TIMEOUT = 3 * 3600


def build_root(machine: str) -> str:
    """The Debian root of `machine`, with the build's virtualenv: made once, kept."""
    reason = rootfs.missing() or rootfs.emulation_missing(machine)
    if reason:
        raise SystemExit(f"cannot build for {machine} here: {reason}")
    root = rootfs.debootstrap(SUITE, PACKAGES, arch=rootfs.DEBIAN_ARCHES[machine])
    shutil.copyfile("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))
    if os.path.exists(HOST_CERTIFICATES):
        shutil.copyfile(HOST_CERTIFICATES, os.path.join(root, "opt", "host-certificates.crt"))
    stamp = f"{VENV}/.installed-{requirements_digest()}"
    if not os.path.exists(root + stamp):
        run(root, f"rm -rf {VENV} && python3 -m venv {VENV} && {VENV}/bin/pip install -q "
                  f"--disable-pip-version-check -r requirements.txt && touch {stamp}")
    return root


def requirements_digest() -> str:
    digest = hashlib.sha256()
    for name in REQUIREMENTS:
        with open(os.path.join(ROOT, name), "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


def build(machine: str, release: bool) -> str:
    """dist/<machine>/trajectoriz (and the release file), built inside the root; returns its path."""
    root = build_root(machine)
    dist = os.path.join("dist", machine)
    python = f"{VENV}/bin/python"
    steps = [f"{python} -m PyInstaller --noconfirm --log-level WARN --workpath pyi-work/{machine} "
             f"--distpath {dist} build/trajectoriz.spec",
             f"{python} build/pack.py --bundle {dist}/trajectoriz-app --output {dist}/trajectoriz"
             + (" --release" if release else "")]
    if release:
        steps.append(f"{python} build/glibc_floor.py {dist}/trajectoriz")
    run(root, " && ".join(steps))
    return os.path.join(ROOT, dist, "trajectoriz")


def run(root: str, script: str) -> None:
    """`script` run by sh inside `root`, from the source tree; its output shown, a failure fatal."""
    env = {"HOME": "/root", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "SOURCE_DATE_EPOCH": source_date()}
    if os.path.exists(HOST_CERTIFICATES):
        env["PIP_CERT"] = "/opt/host-certificates.crt"
    done = rootfs.run(root, ["/bin/sh", "-c", script], env, binds=(ROOT,), cwd=ROOT, timeout=TIMEOUT)
    sys.stdout.write(done.stdout.decode(errors="replace"))
    sys.stderr.write(done.stderr.decode(errors="replace")[-8000:])
    if done.returncode != 0:
        raise SystemExit(f"failed in the {os.path.basename(root)} root (exit {done.returncode}): {script}")


def source_date() -> str:
    """SOURCE_DATE_EPOCH, else the last commit's time (git cannot be asked inside the root: a
    worktree's .git names a folder outside the source tree)."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    said = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%ct"], capture_output=True, text=True)
    return said.stdout.strip() or "0"


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("machine", nargs="?", default="aarch64", choices=sorted(set(rootfs.DEBIAN_ARCHES) - {"x86_64"}))
    options.add_argument("--release", action="store_true", help="also write the versioned release file")
    args = options.parse_args(argv)
    build(args.machine, args.release)
    return 0


if __name__ == "__main__":
    sys.exit(main())
