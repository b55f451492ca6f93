"""INDEX.md's first read on a fresh cache, over a project of real sessions (issue 36: "every fact
for a 21-session project within 5 s").

The project is built from the public samples (../shared/samples, SOURCES.md there): the Claude
Code and Codex sessions of substance (the Claude dotfile sessions, the claude-code-log,
agent-sessions and agent-history ones, Codex's rollouts), each re-homed into one project folder
by rewriting its recorded working directory. Each run starts with empty caches, mounts, times
`cat INDEX.md` (the mount's first answer), checks that every row has its steps and outcome, and
unmounts. The figures go to bench/FIRST_READ.md with the load beside them.

    .venv/bin/python bench/first_read.py [--runs 5] [--samples ../shared/samples]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
CLAUDE = ["dotfile-titles/617b8d63-f8d1-495e-9a83-5c0291579fe1.jsonl",
          "dotfile-titles/b23883a8-3ff5-47ba-a2b9-d1b710b77d8d.jsonl",
          "dotfile-titles/e827650c-0d38-4ecf-8575-2f75aaf959bc.jsonl",
          "dotfile-volcano/7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl",
          "agent-sessions/stage0_small_record_catalog.jsonl", "agent-sessions/stage0_large.jsonl",
          "agent-sessions/stage0_schema_drift.jsonl", "agent-history-real/session-01_v2.1.152.jsonl",
          "claude-code-log/edge_cases.jsonl", "claude-code-log/todowrite_examples.jsonl",
          "claude-code-log/representative_messages.jsonl", "claude-code-log/sidechain_integrated.jsonl",
          "claude-code-log/dag_compact_after_rewind.jsonl", "claude-code-transcripts/sample_session.jsonl"]
CODEX = ["agent-sessions/stage0_small_record_catalog.jsonl", "agent-history/session_with_compaction.jsonl",
         "agentsview/traex_codex_fork_rollout_subagent.jsonl", "agent-history/codex_with_escalation.jsonl",
         "agent-sessions/stage0_large.jsonl", "agent-history-real/session-01_v0.135.0.jsonl",
         "agent-history/codex_golden.jsonl"]
_CWD = re.compile(rb'"(cwd|project)"\s*:\s*"(?:[^"\\]|\\.)*"')


def build(samples: str, root: str) -> tuple[dict, str]:
    """A $HOME with the samples re-homed into `root`/proj (a git work tree); (env, project)."""
    home, project = os.path.join(root, "home"), os.path.join(root, "proj")
    os.makedirs(os.path.join(project, ".git"))
    claude = os.path.join(home, ".claude", "projects", "-proj")
    codex = os.path.join(home, ".codex", "sessions", "2026", "01", "02")
    for folder in (claude, codex):
        os.makedirs(folder)
    for n, name in enumerate(CLAUDE):
        source = os.path.join(samples, "claude", name)
        target = os.path.join(claude, os.path.basename(name))
        _rehomed(source, target, project)
        subagents = source[: -len(".jsonl")]
        if os.path.isdir(subagents):
            shutil.copytree(subagents, target[: -len(".jsonl")])
            for folder, _, files in os.walk(target[: -len(".jsonl")]):
                for file in files:
                    _rehomed(os.path.join(folder, file), os.path.join(folder, file), project)
    for n, name in enumerate(CODEX):
        _rehomed(os.path.join(samples, "codex", name),
                 os.path.join(codex, f"rollout-2026-01-02T00-00-{n:02d}-{os.path.basename(name)}"), project)
    when = time.time() - 86400  # settled sessions, as most of a project's are
    for folder, _, files in os.walk(home):
        for file in files:
            os.utime(os.path.join(folder, file), (when, when))
    env = {"PATH": os.environ["PATH"], "HOME": home, "XDG_CACHE_HOME": os.path.join(root, "cache"),
           "XDG_DATA_HOME": os.path.join(root, "data"), "XDG_CONFIG_HOME": os.path.join(root, "config"),
           "TZ": "UTC", "LANG": "C.UTF-8"}
    return env, project


def _rehomed(source: str, target: str, project: str) -> None:
    with open(source, "rb") as handle:
        data = handle.read()
    with open(target, "wb") as handle:
        handle.write(_CWD.sub(lambda found: b'"' + found[1] + b'":"' + project.encode() + b'"', data))


def trajectoriz(env: dict, *args: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, os.path.join(ROOT, "trajectoriz.py"), *args], env=env, cwd=cwd,
                          capture_output=True, timeout=120)


def one_run(env: dict, project: str) -> tuple[float, int, int]:
    """(seconds of the first `cat INDEX.md`, rows, rows without steps) after a fresh mount."""
    shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
    shutil.rmtree(env["XDG_DATA_HOME"], ignore_errors=True)
    point = os.path.join(project, "memory")
    started = trajectoriz(env, "memory", cwd=project)
    if started.returncode:
        raise RuntimeError(started.stderr.decode())
    try:
        began = time.monotonic()
        index = subprocess.run(["cat", os.path.join(point, "INDEX.md")], capture_output=True, timeout=60).stdout
        seconds = time.monotonic() - began
    finally:
        trajectoriz(env, "memory", "--unmount", cwd=project)
    rows = [line.split("|") for line in index.decode().splitlines() if line.startswith("| `")]
    return seconds, len(rows), sum(1 for cells in rows if not cells[4].strip())


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--samples", default=os.path.join(ROOT, "..", "..", "shared", "samples"))
    parser.add_argument("--out", default=os.path.join(BENCH, "FIRST_READ.md"))
    args = parser.parse_args()
    samples = os.path.abspath(args.samples if os.path.isdir(args.samples) else "/work/shared/samples")
    root = tempfile.mkdtemp(prefix="first-read-")
    try:
        env, project = build(samples, root)
        runs = []
        for _ in range(args.runs):
            before = load()
            seconds, rows, blank = one_run(env, project)
            runs.append((seconds, rows, blank, before, load()))
            print(f"{seconds:.2f} s, {rows} rows, {blank} without steps, load {before} -> {runs[-1][4]}", file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ordered = sorted(r[0] for r in runs)
    lines = ["# INDEX.md's first read on a fresh cache (bench/first_read.py)", "",
             f"A project of {runs[0][1]} real sessions (the public samples: 14 Claude Code, 7 Codex, "
             f"re-homed into one folder), each run with empty caches: mount, then time the first "
             f"`cat INDEX.md`. Median {ordered[len(ordered) // 2]:.2f} s (min {ordered[0]:.2f} s, "
             f"max {ordered[-1]:.2f} s) over {len(runs)} runs; {os.cpu_count()} cores shared with other work.", "",
             "| Run | First read | Rows | Rows without steps | Load (1, 5, 15 min) before | after |", "|---|---|---|---|---|---|"]
    lines += [f"| {n} | {s:.2f} s | {rows} | {blank} | {b} | {a} |" for n, (s, rows, blank, b, a) in enumerate(runs, 1)]
    with open(args.out, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
