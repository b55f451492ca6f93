"""Turn the onedir bundle (dist/trajectoriz-app) into the single file dist/trajectoriz.

The file is build/launcher.sh followed by the bundle as a gzip-compressed tar whose top folder
is the bundle's id, `<version>-<content hash>`: the folder the launcher unpacks it to, once,
in the user's cache. A PyInstaller onedir bundle needs a glibc at least as new as the build
host's; the packed one carries its own loader and C library instead (build/ownlibc.py, on a
copy of the bundle: dist/trajectoriz-app stays as PyInstaller made it), so that it runs on any
Linux of the build's machine (x86_64; aarch64 built under emulation, build/cross.py). A PyInstaller onefile binary would unpack itself on every run (bench/STARTUP.md
has the numbers).

    python build/pack.py [--release] [--host-libc] [--bundle DIR] [--output FILE]

--release also writes dist/trajectoriz-<version>-<platform> and its .sha256; --host-libc packs
the bundle as PyInstaller made it, for the host's glibc (its launcher refuses an older one).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import platform
import shutil
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

sys.path.insert(0, os.path.join(ROOT, "build"))
import glibc_floor  # noqa: E402
import ownlibc  # noqa: E402
from core.version import VERSION  # noqa: E402

DIST = os.path.join(ROOT, "dist")
BUNDLE = os.path.join(DIST, "trajectoriz-app")
LAUNCHER = os.path.join(ROOT, "build", "launcher.sh")
MARKER = ".trajectoriz-app"  # names an unpacked bundle; see build/rthook_app.py


def platform_tag(machine: str | None = None) -> str:
    """linux-x86_64, linux-aarch64: this machine's, or `machine`'s."""
    return f"{platform.system()}-{machine or platform.machine()}".lower()


def bundle_files(bundle: str) -> list[str]:
    """Every path in the bundle, relative and sorted, folders before their contents."""
    found = []
    for folder, dirs, files in os.walk(bundle):
        dirs.sort()
        rel = os.path.relpath(folder, bundle)
        found.extend(os.path.normpath(os.path.join(rel, name)) for name in sorted(dirs + files))
    return sorted(found)


def content_id(bundle: str, paths: list[str]) -> str:
    """`<version>-<16 hex>`: changes whenever any file, name or mode in the bundle does."""
    digest = hashlib.sha256()
    for rel in paths:
        path = os.path.join(bundle, rel)
        st = os.lstat(path)
        digest.update(f"{rel}\0{st.st_mode:o}\0".encode())
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
    return f"{VERSION}-{digest.hexdigest()[:16]}"


def payload(bundle: str, paths: list[str], app_id: str) -> bytes:
    """The bundle as a reproducible tar.gz under the folder `app_id`, with the marker file."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_entry(app_id, tarfile.DIRTYPE, 0o755))
        for rel in paths:
            path = os.path.join(bundle, rel)
            info = tar.gettarinfo(path, arcname=f"{app_id}/{rel}")
            _normalize(info)
            if info.isfile():
                with open(path, "rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
        marker = app_id.encode() + b"\n"
        tar.addfile(_entry(f"{app_id}/{MARKER}", tarfile.REGTYPE, 0o644, len(marker)), io.BytesIO(marker))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=9, mtime=0) as stream:
        stream.write(raw.getvalue())
    return packed.getvalue()


def _entry(name: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size = kind, mode, size
    return _normalize(info)


def _normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Owner-only modes (what trajectoriz writes is private: folders and programs 0700, files
    0600, whatever umask the user has), no owner names, one time."""
    if not info.issym():
        info.mode = 0o700 if info.isdir() or info.mode & 0o100 else 0o600
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    return info


def launcher(app_id: str, data: bytes, facts: dict) -> bytes:
    """build/launcher.sh with its placeholders filled (`facts`: what build/ownlibc.py and the
    glibc floor say); @SKIP@ is the payload's first byte (1-based, for `tail -c +N`) and @SIZE@
    the whole file's length, which both depend on the header's own length."""
    template = open(LAUNCHER, encoding="utf-8").read()
    values = {"@VERSION@": VERSION, "@PLATFORM@": platform_tag(), "@ID@": app_id,
              "@SHA256@": hashlib.sha256(data).hexdigest(), "@MACHINE@": ownlibc.MACHINE,
              "@LOADER@": ownlibc.LOADER, "@HOST_LOADER@": ownlibc.HOST_LOADER}
    values.update({f"@{key.upper()}@": str(value) for key, value in facts.items()})
    for key, value in values.items():
        template = template.replace(key, value)
    skip = size = 0
    while True:
        header = template.replace("@SKIP@", str(skip)).replace("@SIZE@", str(size)).encode()
        if len(header) + 1 == skip and len(header) + len(data) == size:
            return header
        skip, size = len(header) + 1, len(header) + len(data)


def write_executable(path: str, parts: list[bytes]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as handle:
        for part in parts:
            handle.write(part)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def release_name(machine: str | None = None) -> str:
    return f"trajectoriz-{VERSION}-{platform_tag(machine)}"


def release(single: str, into: str = DIST) -> str:
    """The release file (`trajectoriz-<version>-<platform>`, a copy of `single`) and its .sha256
    in folder `into`; README.md's Install section shows what to do with them."""
    name = release_name()
    target = os.path.join(into, name)
    shutil.copyfile(single, target)
    os.chmod(target, 0o755)
    with open(target, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    with open(target + ".sha256", "w", encoding="utf-8") as handle:
        handle.write(f"{digest}  {name}\n")  # the format `sha256sum -c` reads
    return target


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--release", action="store_true", help="also write the versioned release file")
    options.add_argument("--bundle", default=BUNDLE, help="the onedir bundle to pack (bench/startup.py)")
    options.add_argument("--output", default=os.path.join(DIST, "trajectoriz"), help="the single file to write")
    options.add_argument("--host-libc", action="store_true",
                         help="no C library of its own: the host's glibc must be as new as the build host's")
    args = options.parse_args(argv)
    work = os.path.join(ROOT, "pyi-work")
    os.makedirs(work, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pack-", dir=work) as staging:
        bundle = os.path.join(staging, "trajectoriz-app")
        shutil.copytree(args.bundle, bundle, symlinks=True)
        floor = glibc_floor.measure(bundle)["host_glibc_floor"]
        kernel = glibc_floor.kernel_floor(ownlibc.host_library("libc.so.6")) or "3.2"
        facts = {"kernel": kernel, "needs_glibc": floor, "interp_at": "", "interp_room": "", "rpath_at": ""}
        if not args.host_libc:
            facts.update(ownlibc.prepare(bundle, ownlibc.patchelf_program(), floor), needs_glibc="")
        paths = bundle_files(bundle)
        app_id = content_id(bundle, paths)
        data = payload(bundle, paths, app_id)
        said = glibc_floor.statement(glibc_floor.measure(bundle))
    single = args.output
    write_executable(single, [launcher(app_id, data, facts), data])
    cli = os.path.join(os.path.dirname(single), "trajectoriz-cli")  # the name of the published usage
    if os.path.lexists(cli):
        os.remove(cli)
    os.symlink(os.path.basename(single), cli)
    print(f"{single}: {os.path.getsize(single) / 1e6:.1f} MB, id {app_id}; {said}")
    if args.release:
        print(f"{release(single)} and its .sha256")
    return 0


if __name__ == "__main__":
    sys.exit(main())
