"""How to run this trajectoriz again: the frozen executable alone, or Python and the script.

The mount starts its server and render workers with it, the daily archive job runs it, and the
README beside the session files tells the agent that reads it (who may not have trajectoriz on
its PATH) exactly what to type: the program as the user runs it (shown_command)."""

from __future__ import annotations

import os
import shlex
import sys

PROGRAM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where trajectoriz.py is
# The release file's launcher (build/launcher.sh) names itself here: the program it runs is an
# unpacked copy in the user's cache, which an upgrade removes.
RELEASE_FILE = "TRAJECTORIZ_RELEASE_FILE"


def self_command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, os.path.join(PROGRAM_ROOT, "trajectoriz.py")]


def shown_command() -> str:
    """The program as the user runs it, as a shell would take it: `trajectoriz` when that name on
    PATH is this program, else the file the user runs (the release file, or a pip install's
    console script), else `self_command` (a clone: Python and trajectoriz.py)."""
    import shutil

    program = user_program()
    on_path = shutil.which("trajectoriz")
    if on_path and (program and os.path.realpath(on_path) == os.path.realpath(program) or _same_release(on_path)):
        return "trajectoriz"
    if program:
        return shlex.quote(program)
    return " ".join(shlex.quote(part) for part in self_command())


def user_program() -> str | None:
    """The file the user runs this program as, or None (a clone, a bundle run in place)."""
    if getattr(sys, "frozen", False):
        named = os.path.normpath(os.environ.get(RELEASE_FILE) or "relative")
        return named if os.path.isabs(named) and _same_release(named) else None
    import sysconfig

    for scheme in (sysconfig.get_default_scheme(), f"{os.name}_user"):
        try:
            installed = os.path.join(sysconfig.get_path("purelib", scheme), "trajectoriz")
            script = os.path.join(sysconfig.get_path("scripts", scheme), "trajectoriz")
        except KeyError:
            continue
        if os.path.realpath(installed) == os.path.realpath(PROGRAM_ROOT) and os.path.isfile(script):
            return script  # pip's or pipx's console script (pyproject.toml)
    return None


def _same_release(path: str) -> bool:
    """`path` is a release file whose launcher unpacks this very program (its `id=` line names
    the folder this process runs from)."""
    if not getattr(sys, "frozen", False):
        return False
    app_id = os.path.basename(os.path.dirname(sys._MEIPASS))
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return f"\nid={app_id}\n".encode() in head


# The single-file release runs on a C library of its own (build/ownlibc.py), whatever the host
# has. Libraries of the host loaded into the process, libfuse for the mount, are built for the
# host's glibc, and one built for a newer glibc than ours cannot be loaded into it. The release
# also unpacks the same program on the host's C library (trajectoriz-host-libc): the mount
# switches to it where the host's glibc is at least what the program asks of one.
HOST_LIBC = "trajectoriz-host-libc"


def _version(text: str) -> tuple:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def host_glibc() -> tuple | None:
    """The host's glibc version, asked of the host's own getconf (a process of ours answers
    for our C library), or None (musl, no C library, no getconf)."""
    import subprocess

    try:
        said = subprocess.run(["getconf", "GNU_LIBC_VERSION"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    words = said.stdout.split()
    return _version(words[-1]) if said.returncode == 0 and words[:1] == ["glibc"] else None


def runs_on_own_libc() -> bool:
    """This process runs on the C library the release carries."""
    return (getattr(sys, "frozen", False) and os.path.basename(sys.executable) != HOST_LIBC
            and os.path.exists(os.path.join(sys._MEIPASS, "libc", "host-glibc-floor")))


def host_libc_program() -> str | None:
    """This program on the host's C library, when this process runs on its own C library and
    the host's glibc is new enough for that copy; else None."""
    if not runs_on_own_libc():
        return None
    program = os.path.join(os.path.dirname(sys.executable), HOST_LIBC)
    try:
        with open(os.path.join(sys._MEIPASS, "libc", "host-glibc-floor"), encoding="utf-8") as handle:
            floor = _version(handle.read().strip())
    except (OSError, ValueError):
        return None
    if not os.access(program, os.X_OK):
        return None
    host = host_glibc()
    return program if host is not None and host >= floor else None


def use_host_libc() -> None:
    """Become host_libc_program() (same arguments, same environment), if there is one: before
    loading a library of the host's."""
    program = host_libc_program()
    if program:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(program, [program, *sys.argv[1:]])
