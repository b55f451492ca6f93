#!/usr/bin/env bash
# One-time: copy the sessions byte-for-byte out of the fetched snapshots into data/ (provenance in PROVENANCE.md).
set -euo pipefail
D=/work/qa/data
cp_tree() { # repo commit prefix-in-repo dest-dir [grep-filter]
  local repo=$1 c=$2 pre=$3 dest=$4 filt=${5:-.}
  git -C "$repo" ls-tree -r --name-only "$c" "$pre" | grep -E "$filt" | while read -r f; do
    mkdir -p "$dest/$(dirname "${f#$pre}")"
    git -C "$repo" show "$c:$f" > "$dest/${f#$pre}" 2>/dev/null || { rm -f "$dest/${f#$pre}"; echo "MISSING (not in snapshot, >=4 MiB): $repo $f" >&2; }; done
}
M=/work/.mirror
cp_tree $M/493-Property-Estimator+Capstone-Test-Repo/repo 9e20901e98242dd17e2fd28d345b55497501a35c .codex/sessions/ $D/capstone/codex-sessions/
# the 13th group14 session (19-46-51) and the other cwd's session live at later commits
git -C $M/493-Property-Estimator+Capstone-Test-Repo/repo show e32af7acdf2d939b7461bacf1e75805b53756bbf:.codex/sessions/2026/03/09/rollout-2026-03-09T19-46-51-019cd56c-ed6b-7c70-b373-9b9ca784789f.jsonl > $D/capstone/codex-sessions/2026/03/09/rollout-2026-03-09T19-46-51-019cd56c-ed6b-7c70-b373-9b9ca784789f.jsonl
git -C $M/493-Property-Estimator+Capstone-Test-Repo/repo show 67bec8da457e2142029b32240093396bed10081e:.codex/sessions/2026/03/09/rollout-2026-03-09T14-47-50-019cd45b-29bd-7a52-a492-de9ebd6ced40.jsonl > $D/capstone/codex-sessions/2026/03/09/rollout-2026-03-09T14-47-50-019cd45b-29bd-7a52-a492-de9ebd6ced40.jsonl
S=$M/soichiro-nitta+dotfiles/repo; C=03a13ccaa60a84aa1d4ec296bd7169bbf53009e1
for f in $(git -C $S ls-tree -r --name-only $C codex/sessions/ | grep rollout); do
  if git -C $S show "$C:$f" | sed -n 1p | grep -q '"cwd":"/Users/soichiro/Work/aburi-all"'; then
    mkdir -p "$D/aburi/codex-sessions/$(dirname "${f#codex/sessions/}")"; git -C $S show "$C:$f" > "$D/aburi/codex-sessions/${f#codex/sessions/}"; fi
done
A=$M/aistrad+work/repo; C=ece61bc6b5d4c7293dd8d07da79d9f8225809d60
cp_tree $A $C .claude/projects/-home-aiscend-work-mentis/ $D/mentis/claude-project/
cp_tree $A $C .claude/projects/-home-aiscend-work-fortune-ai/ $D/fortune-ai/claude-project/
