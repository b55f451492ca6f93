"""The agent stores trajectoriz reads: one module per store, all with the interface described in
`agents/base.py`. Modules are imported on first use, so a command pays only for the agents it
touches.
"""

from __future__ import annotations

import importlib

# Module names under agents/, in the order listings break ties.
NAMES = ("claude", "codex")


def load(name: str):
    if name not in NAMES:
        raise KeyError(name)
    return importlib.import_module(f"agents.{name}")


def modules(names=None) -> list:
    return [load(name) for name in (names or NAMES)]
