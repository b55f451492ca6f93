"""Looking at a path a store names without hanging on it, or failing on it.

A session's recorded working directory is untrusted: it may hold a NUL (no system call takes
it), or lead, through a symlink, into a FUSE mount whose server is stopped, where any stat
blocks in uninterruptible sleep. `os.path.realpath` stats every component, so it would hang.
`resolve` resolves symlinks one component at a time with lstat and readlink, and stops
looking as soon as the path so far is an avoided mount (`mounts.avoided`: every FUSE mount
but the one holding $HOME) or inside one: the rest is taken as written. An lstat of a
mountpoint reaches its server too, so the check comes before it.
"""

from __future__ import annotations

import os
import stat

from core import mounts, storefs


def usable(path) -> bool:
    """An absolute path that system calls accept (a str, no NUL)."""
    return isinstance(path, str) and "\0" not in path and os.path.isabs(path)


def resolve(path: str, avoided, known: dict | None = None) -> str | None:
    """`storefs.realpath(path)` that never looks inside an avoided mount; None for a path no
    system call takes, or one whose symlinks loop. `known` (path -> its target, None for no
    symlink) remembers what was found, for many paths under the same folders."""
    if not usable(path):
        return None
    done = os.sep
    pending = [part for part in path.split(os.sep) if part]
    pending.reverse()
    links = 0
    while pending:
        part = pending.pop()
        if part == ".":
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        candidate = os.path.join(done, part)
        if mounts.inside(candidate, avoided):
            return os.path.normpath(os.path.join(candidate, *reversed(pending)))
        if known is None:
            target = _link_target(candidate)
        elif candidate in known:
            target = known[candidate]
        else:
            target = known[candidate] = _link_target(candidate)
        if target is None:
            done = candidate
            continue
        links += 1
        if links > storefs.MAX_LINKS:
            return None
        if os.path.isabs(target):
            done = os.sep
        pending.extend(reversed([p for p in target.split(os.sep) if p]))
    return done


def _link_target(path: str) -> str | None:
    """What a symlink points to; None when `path` is not a symlink (or is missing: the rest of
    the path is then taken as written, as realpath does)."""
    try:
        if not stat.S_ISLNK(storefs.lstat(path).st_mode):
            return None
        return storefs.readlink(path)
    except OSError:
        return None


def is_dir(path: str, avoided, known: dict | None = None) -> bool:
    """Whether `path` is a directory, answered without looking inside an avoided mount (no);
    `known` as for `resolve`."""
    resolved = resolve(path, avoided, known)
    if resolved is None or mounts.inside(resolved, avoided):
        return False
    return storefs.isdir(resolved)


def components(path: str, avoided) -> tuple | None:
    """The components of the resolved path (for comparing paths by whole components); None
    for a path that cannot be resolved."""
    resolved = resolve(path, avoided)
    return None if resolved is None else tuple(part for part in resolved.split(os.sep) if part)
