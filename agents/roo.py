"""Roo Code (a Cline fork): tasks in `<VS Code user dir>/globalStorage/rooveterinaryinc.roo-cline/
tasks/<taskId>/`, the store `agents/cline_tasks.py` reads. Roo writes `history_item.json` in each
task directory: the working directory is its `workspace`. A sub-task (`parentTaskId`, created by
the `new_task` tool) is embedded in its parent's document, and listed only when its parent is
gone.
"""

from __future__ import annotations

import os

from agents import cline_tasks
from agents.base import Session
from core import storefs

NAME = "roo"
PREFIX = "ro"
ATIF_NAME = "roo-code"
VERSION = 2

EXTENSION_ID = "rooveterinaryinc.roo-cline"


def storages(env) -> list[str]:
    return [os.path.join(user_dir, "globalStorage", EXTENSION_ID)
            for user_dir in cline_tasks.vscode_user_dirs(env)]


def sources(env):
    for storage in storages(env):
        yield from cline_tasks.task_dirs(storage)


def dependencies(source: str, env) -> list[str]:
    return cline_tasks.task_dependencies(source)


def scan(source: str, env) -> list[Session]:
    session = cline_tasks.scan_task(NAME, source, "vscode-task")
    parent = session.extra.get("parent_task")
    if parent and storefs.isdir(os.path.join(os.path.dirname(source), parent)):
        return []  # embedded in the parent's document
    return [session]


def translate(session: Session, env) -> dict:
    return cline_tasks.translate_task(ATIF_NAME, session.source)
