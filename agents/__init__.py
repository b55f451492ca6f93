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


def names() -> list[str]:
    return list(_all())


def load(name: str):
    """The module of agent `name` (its NAME, e.g. "claude")."""
    return _all()[name]


def modules(selected=None) -> list:
    found = _all()
    return [found[name] for name in (selected or found)]
