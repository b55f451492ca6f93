"""A fake $HOME for the search, show --markdown and stats tests, built from the fixture stores:

- every live store (tests/fixtures/samples/live/<agent>-<version>) of an agent trajectoriz
  reads, its project paths (/tmp/agents/proj-<agent>...) moved under `work/`, where they exist
  (proj-<agent> is a git work tree, so `--local` from its src/ finds it);
- the Claude session with a sub-agent (claude-code-log's minimal_showcase), in work/showcase;
- a copy of Claude's claude-2 session whose first message holds pipes and runs long, in
  work/proj-claude-pipe (a sibling whose name starts like proj-claude's).
"""

from __future__ import annotations

import os
import shutil

from helpers import LIVE, SAMPLES, base_env
from homes import live_stores

SHOWCASE = os.path.join(SAMPLES, "claude", "claude-code-log", "minimal_showcase")
CLAUDE_2 = os.path.join(LIVE, "claude-2.1.332", ".claude", "projects", "-tmp-agents-proj-claude",
                        "348a3463-5332-480a-8329-09f4fe2cc499.jsonl")
PIPE_ID = "77770000-0000-4000-8000-00000000beef"
PIPE_PROMPT = "PIPECHECK grep a | wc -l && echo ok|tee log, count the tokens per trajectory of"


def copy_tree(source: str, target: str, replacements: list[tuple[str, str]]) -> None:
    """Copy a folder, applying text replacements to the files that are UTF-8 text (SQLite
    databases and other binaries are copied as they are)."""
    for folder, _, files in os.walk(source):
        destination = os.path.join(target, os.path.relpath(folder, source))
        os.makedirs(destination, exist_ok=True)
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                data = handle.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                shutil.copy2(path, os.path.join(destination, name))
                continue
            for old, new in replacements:
                text = text.replace(old, new)
            with open(os.path.join(destination, name), "w", encoding="utf-8") as handle:
                handle.write(text)


def build_home(root) -> tuple[dict, str]:
    env = base_env(root)
    home, work = env["HOME"], os.path.join(str(root), "work")
    agent_names = [agent for agent, _ in live_stores()]
    for agent in agent_names:
        for suffix in ("", "-other"):
            os.makedirs(os.path.join(work, f"proj-{agent}{suffix}", "src"), exist_ok=True)
        os.makedirs(os.path.join(work, f"proj-{agent}", ".git"), exist_ok=True)
    for folder in ("showcase", "proj-claude-pipe"):
        os.makedirs(os.path.join(work, folder), exist_ok=True)
    moved = [("/tmp/agents/", f"{work}/")]
    for _, live in live_stores():
        copy_tree(live, home, moved)
    claude_projects = os.path.join(home, ".claude", "projects")
    copy_tree(SHOWCASE, os.path.join(claude_projects, "-showcase"),
              [("/workspace/example-app", f"{work}/showcase")])
    pipe_dir = os.path.join(claude_projects, "-proj-claude-pipe")
    os.makedirs(pipe_dir, exist_ok=True)
    with open(CLAUDE_2, encoding="utf-8") as handle:
        text = handle.read()
    text = (text.replace("348a3463-5332-480a-8329-09f4fe2cc499", PIPE_ID)
            .replace("SCENARIO claude-2 in", PIPE_PROMPT)
            .replace("/tmp/agents/proj-claude", f"{work}/proj-claude-pipe"))
    with open(os.path.join(pipe_dir, f"{PIPE_ID}.jsonl"), "w", encoding="utf-8") as handle:
        handle.write(text)
    return env, work
