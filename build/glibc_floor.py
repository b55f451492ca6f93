"""The glibc floor of a bundle: which C library the host must have for every ELF in it to load.

Reads, with objdump (binutils), the symbol versions each ELF file asks of glibc's libraries (the
"Version References" of `objdump -p`: the versions `objdump -T` prints beside each undefined
symbol), and, when the bundle carries its own C library (build/ownlibc.py), the versions that
library defines and the oldest kernel it supports (its ABI note, `readelf -n`).

    python build/glibc_floor.py [dist/trajectoriz | BUNDLE_FOLDER] [--json]

Prints the floor in one line (`make release` and build/README.md give it), then the ELF files
asking for the newest versions; exits 1 when a carried C library lacks a version an ELF needs.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ownlibc  # noqa: E402

GLIBC_LIBRARIES = set(ownlibc.GLIBC_SONAMES)
# Versions glibc names without a number, and the release that introduced each.
NAMED = {"GLIBC_ABI_DT_RELR": (2, 36)}


def version_key(name: str) -> tuple:
    """GLIBC_2.35 -> (2, 35); GLIBC_2.2.5 -> (2, 2, 5)."""
    if name in NAMED:
        return NAMED[name]
    match = re.fullmatch(r"GLIBC_(\d+(?:\.\d+)+)", name)
    if not match:
        raise ValueError(f"not a glibc version: {name}")
    return tuple(int(part) for part in match.group(1).split("."))


def dotted(key: tuple) -> str:
    return ".".join(str(part) for part in key)


def _objdump(path: str) -> str:
    return subprocess.run(["objdump", "-p", path], capture_output=True, text=True, check=True).stdout


def glibc_references(path: str) -> set[str]:
    """The GLIBC_* versions an ELF asks of glibc's libraries."""
    wanted, library = set(), None
    in_references = False
    for line in _objdump(path).splitlines():
        if line.startswith("Version References:"):
            in_references = True
            continue
        if in_references:
            if not line.strip():
                break
            found = re.match(r"\s+required from (\S+):", line)
            if found:
                library = found.group(1)
            elif library in GLIBC_LIBRARIES:
                name = line.split()[-1]
                if name.startswith("GLIBC_"):
                    wanted.add(name)
    return wanted


def glibc_definitions(path: str) -> set[str]:
    """The GLIBC_* versions a library of glibc defines."""
    defined, in_definitions = set(), False
    for line in _objdump(path).splitlines():
        if line.startswith("Version definitions:"):
            in_definitions = True
            continue
        if in_definitions:
            if not line.strip() or line.startswith("Version References:"):
                break
            name = line.split()[-1]
            if name.startswith("GLIBC_"):
                defined.add(name)
    return defined


def kernel_floor(path: str) -> str | None:
    """The oldest Linux a glibc library supports (its NT_GNU_ABI_TAG note)."""
    notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    found = re.search(r"OS: Linux, ABI: (\d+\.\d+)(?:\.\d+)?", notes)
    return found.group(1) if found else None


def measure(bundle: str) -> dict:
    """What the ELF files of an unpacked bundle need. host_glibc_floor: the newest glibc version
    any ELF outside the carried C library asks for (what the host needs to run the bundle on
    its own C library); carried: the carried C library's newest version, kernel floor and the
    versions it lacks, or None."""
    elves = ownlibc.elf_files(bundle)
    carried_dir = ownlibc.LIBC_DIR + os.sep
    needs = {}
    for rel in elves:
        if rel.startswith(carried_dir):
            continue
        versions = glibc_references(os.path.join(bundle, rel))
        if versions:
            needs[rel] = max(versions, key=version_key)
    newest = max(needs.values(), key=version_key)
    result = {
        "elf_files": len(elves),
        "host_glibc_floor": dotted(version_key(newest)),
        "asking_most": sorted(rel for rel, version in needs.items() if version == newest),
        "carried": None,
    }
    libc = os.path.join(bundle, ownlibc.LIBC_DIR, "libc.so.6")
    if os.path.exists(libc):
        defined = set()
        for rel in elves:
            if rel.startswith(carried_dir):
                defined |= glibc_definitions(os.path.join(bundle, rel))
        wanted = set()
        for rel in elves:
            wanted |= glibc_references(os.path.join(bundle, rel))
        result["carried"] = {
            "glibc": dotted(max(version_key(v) for v in defined if re.fullmatch(r"GLIBC_[\d.]+", v))),
            "kernel": kernel_floor(libc),
            "files": sorted(os.path.basename(rel) for rel in elves if rel.startswith(carried_dir)),
            "lacking": sorted(wanted - defined, key=version_key),
        }
    return result


def statement(result: dict) -> str:
    """The floor in one line."""
    carried = result["carried"]
    if carried is None:
        return (f"glibc floor: {result['host_glibc_floor']} (the host's glibc must be at least that; "
                f"{result['elf_files']} ELF files)")
    return (f"glibc floor: none: it carries its own loader and C library (glibc {carried['glibc']}), "
            f"and needs Linux {carried['kernel']} or later; on the host's C library "
            f"(trajectoriz-host-libc) {result['host_glibc_floor']} ({result['elf_files']} ELF files)")


def unpacked(single: str, into: str) -> str:
    """The bundle inside the single file (build/pack.py's format), unpacked under `into`."""
    with open(single, "rb") as handle:
        data = handle.read()
    skip = int(re.search(rb"\nskip=(\d+)\n", data[:8192]).group(1))
    with tarfile.open(fileobj=io.BytesIO(data[skip - 1:]), mode="r:gz") as tar:
        # Python before 3.11.4 (Debian 12's 3.11.2, which build/cross.py builds with) has no filter
        tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        top = tar.getnames()[0].split("/")[0]
    return os.path.join(into, top)


def measure_any(path: str) -> dict:
    if os.path.isdir(path):
        return measure(path)
    with tempfile.TemporaryDirectory(prefix="trajectoriz-floor-") as folder:
        return measure(unpacked(path, folder))


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("path", nargs="?", default=os.path.join(os.path.dirname(ownlibc.__file__), "..", "dist", "trajectoriz"))
    options.add_argument("--json", action="store_true")
    args = options.parse_args(argv)
    result = measure_any(args.path)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(statement(result))
        print(f"  asking for glibc {result['host_glibc_floor']}: {', '.join(result['asking_most'])}")
    if result["carried"] and result["carried"]["lacking"]:
        print(f"the carried C library lacks {', '.join(result['carried']['lacking'])}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
