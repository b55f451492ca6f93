"""The README.md that sits beside the session files (in the mount and in an export): written
for an agent that just found the directory and knows nothing about trajectoriz: it names the
agents whose sessions are there, and gives the exact command that runs trajectoriz (which need
not be on the agent's PATH)."""

from __future__ import annotations

from collections import Counter

from core import invocation
from rendering import toolkinds

MOUNTED = """It is a read-only view that `trajectoriz` generates when a file is read: nothing here is
stored, a session still being recorded shows its new steps the next time its file is opened,
new sessions appear within seconds, and nothing you do here changes the agents' own files."""

EXPORTED = """These are plain files written by `trajectoriz export`: they change only when it runs again,
and editing them changes nothing in the agents' own files."""


def readme(project: str | None, names: list[str], mounted: bool) -> bytes:
    """The guide for a `memory` mount (`mounted`) or an `export` folder holding the session files
    `names`, of `project` (None: sessions of every project, an `export --all`)."""
    origin = MOUNTED if mounted else EXPORTED
    reading_all = ("translates every session (once: sizes and recent files are cached)" if mounted
                   else "reads every session")
    whose = "this project" if project else "every project"
    title = project or "every project"
    scope = " --local" if project else ""
    me = invocation.shown_command()
    return f"""# Trajectory memory of {title}

This directory holds the past coding-agent sessions of {whose} ({len(names)} session(s)):
one document and one card per session, {written_by(names)}, all translated into one format.
{origin}

## How to answer a question from here

1. Find the sessions: `INDEX.md` has one line per session, newest first: its file name, date,
   agent, title (what it was about), and, once the session was rendered, its steps, outcome
   (`completed`, `interrupted`, `API or auth error`, `answered, then a request left unanswered`,
   `no answer`), the commits it made (short hashes), the files it changed in the project, the
   git branches it ran on, and the directory it ran in when not the project's root.
   Or search (below): titles and every request the user typed, or `--content` for every step.
2. Read the session's card, `<date>_<agent>_<id>.card.md` (under 1 KB typically): its outcome,
   branches and mode, every request of the user with its step (and their answers to the agent's
   questions, plans approved), each commit (hash, branch, subject, git's count, files), the files
   written or edited (those only attempted apart), the failed commands with their first error
   line, the start of the final answer, and the sessions of other agents too that touched the
   same files or branch within hours.
3. Only for details, open the session's `.atif.json` with jq (recipes below): step N of the card,
   of `search --content` and of `trajectoriz show ID --step N` is `.steps[N-1]`; sub-agent S's
   step N (`S:N` on a card) is `.subagent_trajectories[S-1].steps[N-1]`.

## File names

    <date>_<agent>_<id>.atif.json      e.g. 2026-06-10_claude_cl-eb1c6529.atif.json
    <date>_<agent>_<id>.card.md        the session's card, beside it

- `date`: the day the session started (local time).
- `agent`: the agent that recorded it ({", ".join(sorted(agents_of(names))) or "claude, codex, ..."}).
- `id`: the session's short id, the same id `trajectoriz search`, `trajectoriz show` and
  `trajectoriz list` print.

trajectoriz is run here as `{me}` (below: `trajectoriz`).

## What a file holds

Each file is one JSON document in ATIF v1.7 (Agent Trajectory Interchange Format):

- `.session_id`, `.agent.name`, `.agent.model_name`: the session and who ran it.
- `.steps[i]`: the conversation in order; its `.step_id` is i+1, the step number everything here
  prints. `.steps[i].source` is `user`, `agent` or `system`;
  `.steps[i].message` is the text (the user's prompt, the agent's answer); `.steps[i].timestamp`.
- `.steps[i].reasoning_content`: the agent's reasoning, when it was recorded.
- `.steps[i].tool_calls[]`: `.function_name` and `.arguments` of each tool the agent called, as
  the agent recorded them; `.extra.kind` says what it does in the same words for every agent
  (`shell`, `read`, `write`, `edit`, `search`, `fetch`, `task`, `plan`, `other`), `.extra.command`
  is a shell call's command line, `.extra.paths` the files it read, wrote or edited (absolute;
  for a shell call, the files its `>`, `>>`, heredocs, `tee`, `mv`, `cp` and `sed -i` write). Aider has no tool
  calls: a step reporting `.extra.applied_edits` names the files written in `.extra.paths`.
- `.steps[i].observation.results[]`: what the tools returned, in `.content`, joined to the call
  by `.source_call_id` (= the call's `.tool_call_id`).
- `.steps[i].metrics` and `.final_metrics`: tokens (`prompt_tokens`, `completion_tokens`,
  `cached_tokens`) and cost where the agent recorded them.
- `.subagent_trajectories[]`: sessions of sub-agents this session spawned, each a complete
  trajectory of its own.
- `.extra`: the session's working directory (`cwd`), the native file it came from (`source`),
  and `warnings` when part of the native record could not be read.

Secrets that looked like API keys, tokens or passwords were replaced by `«REDACTED:<kind>:<hash>»`.

## Finding a session without reading them all

    {me} search{scope} "words the user typed"   # fast: titles, requests, ids, agents
    {me} search{scope} --content "error text"   # slower: every step; prints each hit's jq path
    {me} blame path/to/file.py:42                   # the sessions that wrote that line, and why
    ls | grep <id>                                       # its card and its document

{"`--local` keeps the search to this project: an id found without it may belong to another project, and its file is not here." if project else "Without `--local`, search looks at every project, as this directory does."}
Reading every file (`grep -r` over this directory) {reading_all};
prefer INDEX.md, the search above and the cards, then open one file.

## jq recipes

    jq -r '.steps[] | select(.source == "user") | "\\(.step_id): \\(.message)"' FILE   # what the user asked, at which step
    jq '.steps[13]' FILE                                                # step 14 (step N is .steps[N-1])
    jq -r '.steps[-1].message' FILE                                     # how it ended
    jq -r '.steps[].tool_calls[]? | .function_name' FILE | sort | uniq -c   # tools used
    jq -r '.steps[].tool_calls[]? | select(.extra.kind=="shell") | .extra.command' FILE  # commands run
    jq '.steps[] | select(.tool_calls[]?.extra.command? // "" | test("pytest"))' FILE
    jq -r '.steps[].tool_calls[]? | select(.extra.kind=="write" or .extra.kind=="edit") | .extra.paths[]' FILE
    jq '.final_metrics' FILE                                            # tokens and cost
    jq -r '.steps[].observation.results[]?.content | strings' FILE | grep -n "Traceback"
{kinds_section(names)}""".encode()


def kinds_section(names: list[str]) -> str:
    """The kind of each tool name of the agents whose sessions are here (none: no section)."""
    present = agents_of(names)
    if not present:
        return ""
    return f"\n## Tool names and their kind\n\n{toolkinds.markdown_table(set(present))}"


def agents_of(names: list[str]) -> Counter:
    """Sessions per agent, from the file names (`<date>_<agent>_<id>.atif.json`)."""
    return Counter(name.split("_")[1] for name in names if name.count("_") >= 2 and name.endswith(".atif.json"))


def written_by(names: list[str]) -> str:
    counts = agents_of(names)
    if not counts:
        return "none yet"
    return "written by " + ", ".join(f"{agent} ({count})" for agent, count in counts.most_common())
