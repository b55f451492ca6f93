"""Regular expressions compiled once and kept, as Python keeps its compiled modules.

The redaction rules are fifteen large patterns; parsing them and generating their code takes
about 7 ms of every run that redacts, a tenth of a first `list`. What `re` makes of a pattern
(the engine's code, its groups) depends only on the pattern, its flags and the Python that
made it, so it is kept in a file beside the compiled modules (`__pycache__/`), keyed by all
three, and handed to the engine directly next time: 0.3 ms. The engine checks any code it is
given (an invalid program is refused, and the pattern is compiled the ordinary way), so a damaged
or stale file costs only the time it saves. Nothing is written where the program cannot write
(an installed or bundled copy), or when Python is told not to write bytecode.
"""

from __future__ import annotations

import marshal
import os
import re
import sys

try:
    import _sre
    from re import _compiler, _parser
except ImportError:  # an implementation without CPython's engine: compiled the ordinary way
    _sre = None


class Kept:
    """The patterns of one module (`name` names its file): `compile` each as `re.compile` would,
    then `save` once all are made."""

    def __init__(self, name: str):
        self.path = _path(name)
        self.kept = _load(self.path)
        self.made: dict = {}

    def compile(self, pattern, flags: int = 0) -> re.Pattern:
        key = (pattern, int(flags))
        parts = self.kept.get(key)
        found = _engine(pattern, parts) if parts is not None else None
        if found is None:
            parts = _parts(pattern, flags)
            found = _engine(pattern, parts) if parts is not None else None
        if found is None:
            return re.compile(pattern, flags)
        self.made[key] = parts
        return found

    def save(self) -> None:
        """Keeps what was made when it differs from what was kept (a rule added, changed or
        gone)."""
        if self.made != self.kept:
            _save(self.path, self.made)
            self.kept = dict(self.made)


def _tag() -> str:
    return f"{sys.implementation.cache_tag}-{sys.hexversion:x}-{getattr(_sre, 'MAGIC', 0)}"


def _path(name: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", f"{name}.{_tag()}.re")


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


def _load(path: str) -> dict:
    try:
        with open(path, "rb") as file:
            kept = marshal.loads(file.read(1 << 22))
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _save(path: str, made: dict) -> None:
    if sys.dont_write_bytecode or _sre is None:
        return
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(marshal.dumps(made))
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass
