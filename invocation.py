"""How to run this trajectoriz again: the frozen executable alone, or Python and the script.

The mount starts its server and render workers with it, the daily archive job runs it, and the
README beside the session files tells the agent that reads it (who may not have trajectoriz on
its PATH) exactly what to type."""

from __future__ import annotations

import os
import shlex
import sys


def self_command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "trajectoriz.py")]


def shown_command() -> str:
    """`self_command` as a shell would take it."""
    return " ".join(shlex.quote(part) for part in self_command())
