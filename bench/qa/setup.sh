#!/usr/bin/env bash
# Rebuild the QA world from data/: a fake HOME with the agents' stores in their native places and one git work tree
# per project, whose path is what the sessions record as their working directory.
#   ./setup.sh [ROOT]     (default: the folder of this script; e.g. ./setup.sh /tmp/qa1 builds /tmp/qa1/home, /tmp/qa1/projects)
# The sessions' recorded project paths are rewritten (every occurrence in each file, plus Claude's encoded folder
# name) from the original machine's path to ROOT/projects/<name>; nothing else in the files is changed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(mkdir -p "${1:-$HERE}" && cd "${1:-$HERE}" && pwd)
DATA=$HERE/data
rm -rf "$ROOT/home" "$ROOT/projects"
mkdir -p "$ROOT/home" "$ROOT/projects"
python3 - "$DATA" "$ROOT" <<'PY'
import os, re, sys, json, datetime
data, root = sys.argv[1], sys.argv[2]
home = os.path.join(root, "home")
projects = [  # name, agent, original cwd
    ("capstone", "codex", "/home/fronk/ECE493/Capstone/Group/ece493_2026w_group14"),
    ("aburi-all", "codex", "/Users/soichiro/Work/aburi-all"),
    ("mentis", "claude", "/home/aiscend/work/mentis"),
    ("fortune_ai", "claude", "/home/aiscend/work/fortune_ai"),
]
src_dir = {"capstone": "capstone", "aburi-all": "aburi", "mentis": "mentis", "fortune_ai": "fortune-ai"}
def claude_dir(path):
    return re.sub(r"[^A-Za-z0-9-]", "-", path)
def last_time(raw):
    for line in reversed(raw.splitlines()):
        m = re.search(rb'"timestamp":\s*"([0-9T:.\-]+)Z?"', line)
        if m:
            try:
                return datetime.datetime.fromisoformat(m.group(1).decode()[:19]).replace(tzinfo=datetime.timezone.utc).timestamp()
            except ValueError:
                pass
    return None
for name, agent, old in projects:
    new = os.path.join(root, "projects", name)
    os.makedirs(new)
    if agent == "codex":
        src, dst = os.path.join(data, src_dir[name], "codex-sessions"), os.path.join(home, ".codex", "sessions")
        subs = [(old, new)]
    else:
        src, dst = os.path.join(data, src_dir[name], "claude-project"), os.path.join(home, ".claude", "projects", claude_dir(new))
        subs = [(old, new), (claude_dir(old), claude_dir(new))]
    for d, _, files in os.walk(src):
        for f in files:
            raw = open(os.path.join(d, f), "rb").read()
            for a, b in subs:
                raw = raw.replace(a.encode(), b.encode())
            out = os.path.join(dst, os.path.relpath(os.path.join(d, f), src))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            open(out, "wb").write(raw)
            t = last_time(raw) if f.endswith(".jsonl") else None
            if t:
                os.utime(out, (t, t))
            elif f.endswith(".jsonl"):
                os.utime(out, (1767225600, 1767225600))  # 2026-01-01: an empty session file
PY
for p in "$ROOT"/projects/*; do
  git -C "$p" init -q -b main
  printf '# %s\n\nWork tree for the trajectoriz QA (the code is not included; the sessions are in the fake HOME).\n' "$(basename "$p")" > "$p/README.md"
  git -C "$p" add README.md
  git -C "$p" -c user.name=qa -c user.email=qa@example.invalid commit -q -m "QA work tree"
done
find "$ROOT/home" -type d -exec chmod 700 {} +
echo "built $ROOT/home and $ROOT/projects/{$(ls "$ROOT/projects" | paste -sd,)}"
