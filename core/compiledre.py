"""Regular expressions compiled once and kept, as Python keeps its compiled modules.

The redaction rules are fifteen large patterns; parsing them and generating their code takes
about 7 ms of every run that redacts, a tenth of a first `list`, and the agents' modules have a
few dozen more. What `re` makes of a pattern
(the engine's code, its groups) depends only on the pattern, its flags and the Python that
made it, so it is kept in a file beside the compiled modules (`__pycache__/`), keyed by all
three, and handed to the engine directly next time: 0.3 ms. The engine checks any code it is
given (an invalid program is refused, and the pattern is compiled the ordinary way), and the file
is read only when its checksum matches and it is this user's, writable by no one else: a damaged
or stale file costs only the time it saves. Nothing is written where the program cannot write
(an installed or bundled copy), or when Python is told not to write bytecode or to write it
elsewhere.
"""

from __future__ import annotations

import atexit
import marshal
import os
import re
import stat
import sys

from core.hashes import sha256

try:
    import _sre
    from re import _compiler, _parser
except ImportError:  # an implementation without CPython's engine: compiled the ordinary way
    _sre = None


MAX_KEPT = 2048  # patterns the file keeps: beyond, only those of the last run (old rules go)

_kept: dict | None = None  # (pattern, flags) -> what the engine takes, as read from the file
_made: dict = {}  # the same, of the patterns compiled in this process


def compile(pattern, flags: int = 0) -> re.Pattern:
    """`re.compile(pattern, flags)`, from the kept file when it has the pattern; what it lacked
    is written to it when the program exits."""
    global _kept
    if _kept is None:
        _kept = _load(_path())
        atexit.register(save)
    key = (pattern, int(flags))
    parts = _kept.get(key)
    found = _engine(pattern, parts) if parts is not None else None
    if found is None:
        parts = _parts(pattern, flags)
        found = _engine(pattern, parts) if parts is not None else None
    if found is None:
        return re.compile(pattern, flags)
    _made[key] = parts
    return found


def save() -> None:
    """Writes the kept file again when this process compiled a pattern it lacked (a rule added
    or changed): with what it kept, unless that makes too many."""
    kept = _kept or {}
    if sys.dont_write_bytecode or all(kept.get(key) == parts for key, parts in _made.items()):
        return
    merged = {**kept, **_made}
    write(_path(), merged if len(merged) <= MAX_KEPT else dict(_made))


def _tag() -> str:
    return f"{sys.implementation.cache_tag}-{sys.hexversion:x}-{getattr(_sre, 'MAGIC', 0)}"


def _path() -> str | None:
    """Beside the compiled modules; None when Python keeps those elsewhere (PYTHONPYCACHEPREFIX:
    nothing is to be written beside the program)."""
    if sys.pycache_prefix:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", f"patterns.{_tag()}.re")


def _parts(pattern, flags: int):
    """What `re._compiler.compile` hands the engine, as marshal can keep it."""
    if _sre is None:
        return None
    try:
        parsed = _parser.parse(pattern, flags)
        code = [int(op) for op in _compiler._code(parsed, flags)]
        groups = dict(parsed.state.groupdict)
        names = [None] * parsed.state.groups
        for group, index in groups.items():
            names[index] = group
        return (int(flags | parsed.state.flags), code, parsed.state.groups - 1, groups, tuple(names))
    except Exception:  # another Python's internals: compiled the ordinary way
        return None


def _engine(pattern, parts):
    try:
        flags, code, groups, group_index, index_group = parts
        return _sre.compile(pattern, flags, code, groups, group_index, index_group)
    except Exception:  # refused by the engine (a damaged file), or another shape
        return None


LIMIT = 1 << 22  # bytes of a kept file read at most: a larger one is not ours


def _load(path: str | None) -> dict:
    """What the kept file holds; nothing unless it is a regular file of this user that no one
    else may write, whose checksum matches (a damaged file; another user's, in a shared install)."""
    if path is None:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o022 \
                or found.st_size > LIMIT:
            return {}
        data = os.read(fd, LIMIT)
        if data[:32] != sha256(_tag().encode() + data[32:]).digest():
            return {}
        kept = marshal.loads(data[32:])
    except Exception:  # unreadable, or no marshal of ours (a huge claimed size raises MemoryError)
        return {}
    finally:
        os.close(fd)
    return kept if isinstance(kept, dict) else {}


def write(path: str | None, made: dict | None = None) -> None:
    """Keeps `made` (by default, the patterns this process compiled) in the file `path`; the
    build writes the bundle's so (a bundle cannot write beside its modules)."""
    made = _made if made is None else made
    if path is None or _sre is None:
        return
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        # version 2: no references, whose flags follow each object's reference count at that moment
        # (two builds from the same sources wrote other bytes), so that the bundle is reproducible
        payload = marshal.dumps(made, 2)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(sha256(_tag().encode() + payload).digest() + payload)
        os.replace(temporary, path)
        temporary = None
    except (OSError, ValueError):
        pass
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
