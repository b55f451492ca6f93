"""The README.md that sits beside the session files (in the mount and in an export): written
for an agent that just found the directory and knows nothing about trajectoriz: the cheapest
route to an answer first (INDEX.md, a card, a search of the transcripts, a step range of one, the
document last), the agents whose sessions are there, and the exact command that runs trajectoriz
(which need not be on the agent's PATH)."""

from __future__ import annotations

from collections import Counter

from core import invocation
from rendering import toolkinds

MOUNTED = """A read-only view trajectoriz generates when a file is read: nothing here is stored, a session being
recorded shows its new steps the next time its files are opened, and nothing done here changes the
agents' own files."""

EXPORTED = """Plain files written by `trajectoriz export`: they change only when it runs again, and editing them
changes nothing in the agents' own files."""

# What a search of the folder returns: in the mount, `.atif/` is not listed, so recursing never
# reaches the documents; an export's `.atif/` is a real folder, which `rg` skips (it is hidden)
# and `grep -r` does not.
GREP_MOUNTED = "grep -rn 'words' .        # or rg -n: lines of cards and transcripts, never of documents"
GREP_EXPORTED = ("rg -n 'words'             # lines of cards and transcripts (grep -rn also reads the documents\n"
                 "                                 # in .atif/: grep -rn --exclude-dir=.atif 'words' . does not)")


def readme(project: str | None, names: list[str], mounted: bool) -> bytes:
    """The guide for a `memory` mount (`mounted`) or an `export` folder holding the session files
    `names`, of `project` (None: sessions of every project, an `export --all`): the cheapest route
    to an answer first."""
    whose = "this project" if project else "every project"
    scope = " --local" if project else ""
    me = invocation.shown_command()
    elsewhere = ("`--local` keeps a search to this project: an id found without it may belong to another "
                 "project, and its files are not here." if project else
                 "Without `--local`, search looks at every project, as this directory does.")
    return f"""# Trajectory memory of {project or "every project"}

The past coding-agent sessions of {whose} ({len(names)} session(s)), {written_by(names)}, each as
a card, a transcript and a document named `<date>_<agent>_<id>` (`ls | grep <id>` finds all three).
{MOUNTED if mounted else EXPORTED}

## The cheapest route to an answer

1. `INDEX.md`: a line per session, newest first: date, agent, title, steps, outcome, commits, files,
   branch.
2. `<date>_<agent>_<id>.card.md`: the session on a page: each request of the user with its step
   (their answers to the agent's questions, plans approved), the outcome, branches and mode, commits,
   files changed, failed commands with their first error line, the final answer's start, and the
   sessions of any agent that touched the same files or branch within hours.
3. Search the conversations:

       {GREP_MOUNTED if mounted else GREP_EXPORTED}

   `<date>_<agent>_<id>.transcript.md` is the conversation as text: `## N · user · 2026-06-10 14:02`
   heads step N (`## S:N` a sub-agent's); the user's and the agent's messages are whole; each tool
   call is a line (`$ make test`, `edit src/a.py (-2 +5 lines)`, `read src/b.py`), `✗` when it
   failed or was refused, with its output's first and last lines. One grep can answer several
   questions: `grep -n -e 'first words' -e 'other words' *.transcript.md`.
4. Read around a hit: `sed -n 120,160p FILE.transcript.md` (a bounded range: the sub-agents' steps
   follow the session's at the end of the file); `grep -n '^## [0-9]' FILE.transcript.md` lists where
   each step starts; `{me} show <id> --markdown --steps 10-20` prints those steps only.
5. Only for an output the transcript cut: the document, `<date>_<agent>_<id>.atif.json` (ATIF v1.7
   JSON), at the jq path the cut names: `jq -r '.steps[13].observation.results[0].content' FILE`.

trajectoriz is run here as `{me}`.

## Search

    {me} search{scope} "words the user typed"   # titles and every request
    {me} search{scope} --content "error text"   # every step: its transcript's file:line, step, jq path
    {me} blame path/to/file.py:42                   # the sessions that wrote that line

{elsewhere}

## The documents (jq)

Step N everywhere (cards, transcripts, search, `show --step N`) is `.steps[N-1]`; sub-agent S's
step N (`S:N`) is `.subagent_trajectories[S-1].steps[N-1]`. A step has `.source` (`user`, `agent`,
`system`), `.message`, `.timestamp`, `.reasoning_content`, `.tool_calls[]` (`.function_name`,
`.arguments`, and `.extra.kind`: `shell`, `read`, `write`, `edit`, `search`, `fetch`, `task`, `plan`,
`other`; `.extra.command`, `.extra.paths`) and `.observation.results[]` (`.content`, joined to its
call by `.source_call_id`). `.final_metrics` holds tokens and cost, `.extra.cwd` the directory.

    jq -r '.steps[] | select(.source == "user") | "\\(.step_id): \\(.message)"' FILE   # the requests
    jq -r '.steps[].tool_calls[]? | select(.extra.kind=="shell") | .extra.command' FILE  # commands run

Secrets that looked like API keys, tokens or passwords were replaced by `«REDACTED:<kind>:<hash>»`.
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
