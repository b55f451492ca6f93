"""`make demo`: trajectory memory over the bundled example sessions.

Copies examples/home to a temporary directory, re-homes the sessions' working directories into
one demo project, then runs the commands a user (or an agent) would: list, then memory (mounted
with FUSE, or written by `export` where FUSE is missing), unmounted at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = [sys.executable, os.path.join(os.path.dirname(HERE), "trajectoriz.py")]


def stage(workdir: str) -> tuple[dict, str]:
    """A copy of the example $HOME whose sessions belong to `workdir/project` (and a few to
    `workdir/other-project`, which the demo project must not show)."""
    home, project, other = (os.path.join(workdir, n) for n in ("home", "project", "other-project"))
    shutil.copytree(os.path.join(HERE, "home"), home)
    for path in (project, other):
        os.makedirs(path)
    pattern = re.compile(r"/tmp/agents/proj-[a-z]+(-other)?")
    for folder, _, files in os.walk(home):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read()
            text = pattern.sub(lambda m: other if m.group(1) else project, text)
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(text)
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(workdir, "cache"))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME", "QWEN_HOME",
                     "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        env.pop(variable, None)
    return env, project


def run(title: str, args: list[str], env: dict, cwd: str) -> int:
    print(f"\n$ {title}", flush=True)
    return subprocess.run(args, env=env, cwd=cwd, check=False).returncode


def show_memory(memory: str, env: dict, project: str) -> None:
    """What an agent would do with the directory: list it, read the guide, ask jq."""
    run("ls -l memory/", ["ls", "-l", memory], env, project)
    run("head -n 12 memory/README.md", ["head", "-n", "12", os.path.join(memory, "README.md")], env, project)
    files = sorted(f for f in os.listdir(memory) if f.endswith(".atif.json"))
    if shutil.which("jq") and files:
        run(f"jq -r '.steps[] | select(.source == \"user\") | .message' memory/{files[0]}",
            ["jq", "-r", '.steps[] | select(.source == "user") | .message', os.path.join(memory, files[0])],
            env, project)


def main() -> int:
    workdir = tempfile.mkdtemp(prefix="trajectoriz-demo-")
    memory = ""
    mounted = False
    try:
        env, project = stage(workdir)
        print(f"Demo project: {project}\n(its sessions come from examples/home, re-homed here)")
        run("trajectoriz list", CLI + ["list"], env, project)
        memory = os.path.join(project, "memory")
        mounted = run("trajectoriz memory", CLI + ["memory"], env, project) == 0
        if not mounted:
            print("\n(no FUSE here: the same files, written by export instead)")
            run(f"trajectoriz export --out {memory}", CLI + ["export", "--out", memory], env, project)
        show_memory(memory, env, project)
    finally:
        if mounted:
            run("trajectoriz memory --unmount", CLI + ["memory", "--unmount"], env, project)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
