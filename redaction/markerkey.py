"""The per-user key that redaction markers are made with (redact.marker).

A marker shows a few hex digits of a digest of the secret it replaces, so that a reader can
tell two mentions of one secret apart from two secrets. A digest of the secret alone is an
oracle: whoever reads a marker (an agent in memory/, anyone given an export) tests guessed
passwords against it offline. Keyed with 32 random bytes that never leave the user's private
data folder, the digits tell nothing without the key.

The key lives at `${XDG_DATA_HOME:-~/.local/share}/trajectoriz/marker.key` (0600, in a 0700
folder, beside the archive: kept when the cache is cleared, so that markers stay the same). It
is made when the first marker is; where it cannot be kept (a read-only home, a folder another
user owns, a symlink), the process uses a key of its own and says so: markers then differ from
run to run, and still tell nothing.
"""

from __future__ import annotations

import os
import stat
import sys

from core import cache

KEY_BYTES = 32
KEY_FILE = "marker.key"


def path_of(env) -> str:
    base = cache.xdg_dir(env, "XDG_DATA_HOME", ".local", "share")
    return os.path.join(base, "trajectoriz", KEY_FILE)


def load(env) -> bytes:
    """The user's key: read, or made and kept when there is none (or none that is safe to
    use); a key for this process alone when none can be kept."""
    path = path_of(env)
    key = (_read(path) or _make(path)) if cache.usable(os.path.dirname(path)) else None
    if key is None:
        print(f"trajectoriz: warning: no key for redaction markers can be kept in {os.path.dirname(path)} "
              "(not a folder of yours that can be written): markers differ from run to run", file=sys.stderr)
        return os.urandom(KEY_BYTES)
    return key


def _read(path: str) -> bytes | None:
    """The key at `path` if it is one: a regular file of ours that no one else may read, of the
    right size. Any other (another user's, readable by others, truncated) is not used."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        key = handle.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None


def _make(path: str) -> bytes | None:
    """A new key written at `path`, or the one another process wrote first (it wins: both then
    make the same markers). None when it cannot be written."""
    key = os.urandom(KEY_BYTES)
    try:
        cache.make_private_dirs(os.path.dirname(path))
        tmp = f"{path}.{os.getpid()}.tmp"
        cache.write_private(tmp, key)
        try:
            os.link(tmp, path)  # never replaces a key another process just made
        except FileExistsError:
            if _read(path) is None:
                os.replace(tmp, path)  # the file there is no key to use
            else:
                os.unlink(tmp)
            return _read(path)
        os.unlink(tmp)
    except OSError:
        return None
    return key
