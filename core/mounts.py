"""The mount table, and the platform commands around FUSE mounts, used without ever touching a
mounted file system: a FUSE server that hangs would hang whoever looks inside its mount.

Linux reads /proc/self/mountinfo and unmounts with fusermount3, fusermount, then umount (root);
macOS (macFUSE, FUSE-T) reads `mount` and unmounts with umount, then diskutil. A stale mount,
whose server is gone, answers ENOTCONN on Linux and ENXIO on macOS (ECONNABORTED once aborted);
`os.path.ismount()` says False for it, so the table is the only reliable witness.

Where there is no table (Linux without /proc: a container or a mount namespace that has none),
`find` asks the mount point itself: something is mounted there when its device differs from
its parent's, or when its stat fails as a dead mount's does or gets no answer. That stat goes
to the mount's server, so it is asked in a thread abandoned after STAT_SECONDS; the kind of
such a mount is not known (UNKNOWN), and `avoided` finds none.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import threading
import time
from collections import namedtuple

from core import compiledre
from core.cache import home

STALE_ERRNOS = {errno.ENOTCONN, errno.ENXIO, errno.ECONNABORTED}
OURS = "trajectoriz"          # fsname (and Linux subtype) of trajectoriz's own mounts
UNKNOWN = "unknown"           # the kind of a mount seen without a mount table
COMMAND_SECONDS = 10
STAT_SECONDS = 2.0


class Mount(namedtuple("Mount", "point fstype source")):
    """One line of the mount table."""
    __slots__ = ()

    @property
    def is_fuse(self) -> bool:
        kind = self.fstype
        return (kind in ("fuse", "fuseblk", "macfuse", "osxfuse", "fusefs")
                or kind.startswith("fuse.") or self.source.startswith("fuse-t"))

    @property
    def is_ours(self) -> bool:
        return self.is_fuse and (self.source == OURS or self.fstype == f"fuse.{OURS}")


def table() -> list[Mount]:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            return parse_mountinfo(handle.read())
    except FileNotFoundError:  # macOS, BSDs
        pass
    import subprocess  # here only: discovery reads the table on every run

    try:
        listed = subprocess.run(["mount"], capture_output=True, text=True, timeout=COMMAND_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_mount_output(listed.stdout)


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """`id parent major:minor root point options [optional...] - fstype source super-options`."""
    found = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(" "), right.split(" ")
        if sep and len(fields) >= 5 and len(tail) >= 2:
            found.append(Mount(_unescape(fields[4]), tail[0], _unescape(tail[1])))
    return found


_BSD_LINE = compiledre.compile(r"^(?P<source>.+?) on (?P<point>.+) \((?P<fstype>[^,)]+)")


def parse_mount_output(text: str) -> list[Mount]:
    """`source on point (fstype, options...)`, as macOS and the BSDs print it."""
    found = []
    for line in text.splitlines():
        match = _BSD_LINE.match(line)
        if match:
            found.append(Mount(match["point"], match["fstype"].strip(), match["source"]))
    return found


def _parts(path: str) -> tuple:
    return tuple(part for part in os.path.abspath(path).split(os.sep) if part)


_points: dict = {}  # tuple of mount points -> their parts (one or two sets per process)


def inside(path: str, points) -> bool:
    """Whether `path` is one of `points` or below one, comparing whole components of absolute
    paths (no symlink resolution: that would look inside)."""
    if not points:  # the usual case: discovery asks this of every source
        return False
    key = tuple(points)
    wanted = _points.get(key)
    if wanted is None:
        if len(_points) > 16:
            _points.clear()
        wanted = _points[key] = [_parts(p) for p in points]
    parts = _parts(path)
    return any(parts[: len(p)] == p for p in wanted)


def find(point: str, mounts: list[Mount] | None = None) -> Mount | None:
    """The last (uppermost) mount at `point`."""
    listed = table() if mounts is None else mounts
    if not listed and mounts is None:  # no table: even / would be in one
        return seen_mounted(point)
    wanted = _parts(point)
    matches = [m for m in listed if _parts(m.point) == wanted]
    return matches[-1] if matches else None


def seen_mounted(point: str, seconds: float = STAT_SECONDS) -> Mount | None:
    """A mount at `point` as its own stat shows it, without a table (see the module's docstring)."""
    here = stat_within(point, seconds)
    if isinstance(here, OSError):
        return Mount(point, UNKNOWN, "") if here.errno in STALE_ERRNOS else None
    parent = stat_within(os.path.dirname(os.path.abspath(point)), seconds)
    if here is None or (isinstance(parent, os.stat_result) and parent.st_dev != here.st_dev):
        return Mount(point, UNKNOWN, "")
    return None


def stat_within(path: str, seconds: float):
    """`os.stat(path)`, its OSError, or None when no answer came within `seconds` (the thread
    asking is left behind, and ends when the mount it waits on does)."""
    found = []

    def look() -> None:
        try:
            found.append(os.stat(path))
        except OSError as exc:
            found.append(exc)

    asking = threading.Thread(target=look, name="stat", daemon=True)
    asking.start()
    asking.join(seconds)
    return found[0] if found else None


def avoided(env, mounts: list[Mount] | None = None) -> list[str]:
    """FUSE mount points that store discovery must not enter: a hung server would hang it, and
    trajectoriz's own mounts hold its output, not agent stores. A FUSE mount that holds $HOME is
    where the user keeps the stores, so it is read."""
    home_parts = _parts(home(env))
    found = []
    for mount in table() if mounts is None else mounts:
        holds_home = home_parts[: len(_parts(mount.point))] == _parts(mount.point)
        if mount.is_ours or (mount.is_fuse and not holds_home):
            found.append(mount.point)
    return found


# unmounting ---------------------------------------------------------------------------------------
def unmount_commands(point: str, force: bool = False) -> list[list[str]]:
    """The commands to try in order. `force` detaches a busy or dead mount (Linux: lazily, so
    processes using it keep working until they leave it)."""
    if sys.platform == "darwin":
        if force:
            return [["diskutil", "unmount", "force", point], ["umount", "-f", point]]
        return [["umount", point], ["diskutil", "unmount", point]]
    import shutil

    helpers = [tool for tool in ("fusermount3", "fusermount") if shutil.which(tool)]
    flag = "-uz" if force else "-u"
    return [[tool, flag, point] for tool in helpers] + [["umount", "-l", point] if force else ["umount", point]]


def unmount(point: str, force: bool = False) -> tuple[bool, str]:
    """Unmount `point`: (whether it is gone, the last command's complaint)."""
    import subprocess

    complaint = ""
    for command in unmount_commands(point, force):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_SECONDS)
            lines = (done.stderr or done.stdout).strip().splitlines()
            complaint = lines[-1] if lines else complaint
        except (OSError, subprocess.TimeoutExpired) as exc:
            complaint = str(exc)
        if _gone(point):
            return True, ""
    return False, complaint


def _gone(point: str, seconds: float = 0.5) -> bool:
    """fusermount may report failure yet unmount, or unmount a moment later: ask the table."""
    deadline = time.monotonic() + seconds
    while find(point) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
