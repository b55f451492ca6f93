"""Kilo CLI: an opencode fork that keeps opencode's stores under its own name,
`${XDG_DATA_HOME:-~/.local/share}/kilo/kilo.db` (`$KILO_DB` overrides it). Everything is read
by `agents/opencode.py`; this module only says where."""

from __future__ import annotations

from agents import opencode
from agents.base import Session

NAME = "kilo"
PREFIX = "kl"
ATIF_NAME = "kilo-cli"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("kilo", "--session", "{id}"), "resume_prompt": ("kilo", "run", "--session", "{id}", "{prompt}"),
       "start": ("kilo", "--prompt", "{prompt}"), "start_prompt": ("kilo", "run", "{prompt}"), "checked": "7.7.7"}
VERSION = opencode.VERSION

KILO = opencode.Family("kilo", "KILO_DB", NAME, ATIF_NAME)


def sources(env):
    return opencode.family_sources(env, KILO)


def dependencies(source: str, env) -> list[str]:
    return opencode.family_dependencies(source)


def scan(source: str, env) -> list[Session]:
    return opencode.family_scan(source, env, KILO)


def translate(session: Session, env) -> dict:
    return opencode.family_translate(session, env, KILO)


def extract(session: Session, env) -> bytes:
    """Its session's rows as opencode's (discovery/archive.py): the schemas are one family's."""
    return opencode.extract(session, env)


def extract_signature(session: Session, env) -> str | None:
    return opencode.extract_signature(session, env)
