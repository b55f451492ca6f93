"""oh-my-pi (can1357/oh-my-pi), a fork of pi that keeps pi's session format (v3) under its own
name: `${OMP_CODING_AGENT_DIR:-~/.omp/agent}/sessions/--<cwd with / as ->--/<ts>_<uuid>.jsonl`.
Everything is read by `agents/pi.py`, which knows the records the fork adds; this module only
says where."""

from __future__ import annotations

import os

from agents import pi
from agents.base import env_dir, Session

NAME = "omp"
PREFIX = "om"
ATIF_NAME = "oh-my-pi"
VERSION = pi.VERSION


def sessions_dir(env) -> str:
    return os.path.join(env_dir(env, "OMP_CODING_AGENT_DIR", ".omp", "agent"), "sessions")


def sources(env):
    return pi.session_files(sessions_dir(env))


def scan(source: str, env) -> list[Session]:
    return [pi.scan_file(source, NAME)]


def translate(session: Session, env) -> dict:
    return pi.translate_file(session, ATIF_NAME)
