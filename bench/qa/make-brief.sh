#!/usr/bin/env bash
# Print a brief with its placeholders filled in, ready to hand to a fresh agent.
#   ./make-brief.sh memory|raw ROOT RUN [TRAJCMD]
# ROOT: a world built by ./setup.sh ROOT; RUN: the run's name (its log is QDIR/runs/RUN.log);
# TRAJCMD: how to run trajectoriz (default: /work/main's venv and script). QDIR is this folder.
set -euo pipefail
kind=$1 root=$(cd "$2" && pwd) run=$3
traj=${4:-/work/main/.venv/bin/python /work/main/trajectoriz.py}
qdir=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$qdir/runs"
sed -e "s|TRAJCMD|$traj|g" -e "s|\bTRAJ\b|$traj|g" -e "s|QDIR|$qdir|g" -e "s|ROOT|$root|g" -e "s|\bRUN\b|$run|g" \
  "$qdir/brief-$kind.md"
