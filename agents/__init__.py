"""The agent stores trajectoriz reads: one module per store, each with the interface described
in `agents/base.py`. Any module in this package that defines `translate` is an agent, so adding
an agent is adding its file; helper modules (`base`, `sqlite_ro`, `titles`) define no `translate`.

May import `redaction`, `atif` and `core`; nothing that discovers, renders or serves sessions.
"""

from __future__ import annotations

import importlib
import os

_HELPERS = ("base", "sqlite_ro", "titles")
_loaded: dict | None = None


def _all() -> dict:
    global _loaded
    if _loaded is None:
        found = {}
        for name in _module_names():
            if not _agent_file(name):
                continue
            module = importlib.import_module(f"{__name__}.{name}")
            if hasattr(module, "translate"):
                found[module.NAME] = module
        _loaded = found
    return _loaded


def _module_names() -> list[str]:
    """The modules of this package, sorted: its folder's `.py` files; in a bundle that keeps
    them in an archive (PyInstaller's), those pkgutil finds there. (Importing pkgutil costs a
    first discovery more than listing a folder.)"""
    names: set = set()
    for folder in __path__:
        try:
            names.update(name[:-3] for name in os.listdir(folder) if name.endswith(".py") and name[:-3].isidentifier())
        except OSError:
            pass
    if not names:
        import pkgutil

        names = {info.name for info in pkgutil.iter_modules(__path__)}
    return sorted(names)


_alone: dict = {}  # NAME -> module, of the agents imported one by one


def names() -> list[str]:
    return list(_all())


def load(name: str):
    """The module of agent `name` (its NAME, e.g. "claude"): imported alone when its file is
    named after it (importing every agent costs more than a warm listing), else found among all."""
    if _loaded is None and name not in _alone and _agent_file(name):
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            module = None
        if module is not None and getattr(module, "NAME", None) == name and hasattr(module, "translate"):
            _alone[name] = module
    return _alone.get(name) or _all()[name]


def _agent_file(name) -> bool:
    return isinstance(name, str) and name.isidentifier() and name not in _HELPERS and not name.startswith("_")


def modules(selected=None) -> list:
    if selected:
        return [load(name) for name in selected]
    return list(_all().values())


def named_by_prefix(prefix: str) -> str | None:
    """The agent whose short ids start with `prefix` (its PREFIX), importing first the modules
    whose file name starts like it, and the others only if none of them is."""
    files = [name for name in _module_names() if _agent_file(name)]
    for name in sorted(files, key=lambda n: (not n.startswith(prefix[:1]), n)):
        module = importlib.import_module(f"{__name__}.{name}")
        if hasattr(module, "translate") and getattr(module, "PREFIX", module.NAME[:2]) == prefix:
            return module.NAME
    return None
