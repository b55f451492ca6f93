"""The agent stores trajectoriz reads: one module per store, each with the interface described
in `agents/base.py`. Any module in this package that defines `translate` is an agent, so adding
an agent is adding its file; helper modules (`base`, `sqlite_ro`) define no `translate`.
"""

from __future__ import annotations

import importlib

_HELPERS = ("base", "sqlite_ro")
_loaded: dict | None = None


def _all() -> dict:
    global _loaded
    if _loaded is None:
        import pkgutil  # here: a warm listing loads no agent

        found = {}
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            if info.name in _HELPERS or info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            if hasattr(module, "translate"):
                found[module.NAME] = module
        _loaded = found
    return _loaded


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
    import pkgutil

    files = [info.name for info in pkgutil.iter_modules(__path__) if _agent_file(info.name)]
    for name in sorted(files, key=lambda n: (not n.startswith(prefix[:1]), n)):
        module = importlib.import_module(f"{__name__}.{name}")
        if hasattr(module, "translate") and getattr(module, "PREFIX", module.NAME[:2]) == prefix:
            return module.NAME
    return None
