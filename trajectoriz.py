#!/usr/bin/env python3
"""trajectoriz: every coding agent's past sessions, as ATIF documents and as memory.

The command line only: each command's work lives in its own module, imported when the command
runs, so that `--version` or a search never pays for the mount.
"""

from __future__ import annotations

import argparse
import os
import sys

if __package__:  # installed by pip: site-packages/trajectoriz/ holds this file and its packages (pyproject.toml)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.modules["trajectoriz"] = sys.modules[__name__]  # `import trajectoriz` is this module, as in the source tree

from core.version import VERSION  # noqa: E402

EXIT_ERROR = 2


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The program's parser; given a command (`main` reads it from the arguments), with that
    command's parser alone: the parsers of every command cost a run milliseconds to build."""
    parser = Parser(
        prog="trajectoriz",
        description="Turn the sessions every coding agent records (Claude Code, Codex, Gemini "
                    "CLI, opencode, Copilot CLI, ...) into ATIF v1.7 documents: list, show, "
                    "search and export them, or mount them as a read-only memory/ directory.",
        epilog="Exit status: 0 success, 1 nothing found (search, blame) or invalid documents "
               "(validate), 2 error.")
    parser.add_argument("--version", action="version", version=f"trajectoriz {VERSION}",
                        help="print the version and exit")
    parser.add_argument("--man", action="store_true",
                        help="print this program's manual page (roff, the text `man` reads; through "
                             "`man -l -` when the output is a terminal) and exit: the single-file "
                             "executable carries it")
    parser.add_argument("--completion", choices=("bash", "zsh", "fish"), metavar="SHELL",
                        help="print the completion script of SHELL (bash, zsh or fish) and exit: "
                             "commands, options, and the session ids of the current project")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands", parser_class=Parser,
                                     description="Run `trajectoriz COMMAND --help` for the options of each.")
    for name, add in COMMANDS.items():
        if only is None or name == only:
            add(commands)
    parser.subcommands = commands.choices  # main() reports a command's unknown option with its usage
    return parser


def _list_parser(commands) -> None:
    listing = commands.add_parser(
        "list", help="list sessions of this project (or all) as a table", epilog=EPILOGS["list"],
        description="List sessions, newest first: those of the current project (its git work "
                    "tree, or the current directory) unless --all or --dir says otherwise.")
    _scope_options(listing)
    listing.add_argument("--agent", metavar="NAME", help="only sessions of this agent (e.g. claude, codex)")
    listing.add_argument("--steps", action="store_true",
                         help="give every session's step count and size, translating the sessions "
                              "not rendered before (on every core); without it a listing translates "
                              "nothing and leaves those cells blank (null in --json)")
    listing.add_argument("--json", action="store_true", help="one JSON object per session, for scripts")


def _show_parser(commands) -> None:
    show = commands.add_parser(
        "show", help="print one session as an ATIF document", epilog=EPILOGS["show"],
        description="Print a session as its ATIF v1.7 document, byte-identical to its file in "
                    "the memory mount. ID is a short id (cl-eb1c6529), a mount file name, or "
                    "the agent's own session id (or a unique prefix of it).")
    show.add_argument("id", metavar="ID", help="session id, as list, search and the mount show it")
    show.add_argument("--markdown", action="store_true",
                      help="print the session's transcript instead of JSON, the bytes of its "
                           "transcript file in the memory mount: each step's header (## N · source · "
                           "time), the messages whole, a line per tool call with its output's first "
                           "and last lines and the jq path to the whole")
    part = show.add_mutually_exclusive_group()
    part.add_argument("--step", type=int, metavar="N", help="print only step N, as one JSON object: the step numbered N by "
                                                                   "search --content and the cards, jq's .steps[N-1]")
    part.add_argument("--steps", metavar="A-B",
                      help="print only steps A to B (A-B, A- for A to the end, or A): read a long "
                           "session a slice at a time; the transcript ends with the command for the "
                           "next slice")
    show.add_argument("--subagent", metavar="K",
                      help="the embedded sub-agent K instead of the session: its position (1, 2, ...; "
                           "2.1 for a sub-agent's own sub-agent, as search --content prints it) or its "
                           "trajectory_id; --step/--steps then count its steps")
    show.add_argument("--max-chars", type=int, default=400, metavar="N",
                      help="with --markdown, cut (or, for messages, wrap) lines longer than N "
                           "characters (default 400, the mount's; 0 cuts nothing: tool outputs whole)")
    _redaction_option(show)
    _show_html_options(show)


def _show_html_options(show) -> None:
    show.add_argument("--html", action="store_true",
                      help="print one self-contained HTML page of the session (to open in a browser, "
                           "or to share: redacted like every output), its tool calls folded to one line")
    show.add_argument("--out", metavar="FILE", help="with --html, write the page to FILE (0600) instead of stdout")


def _search_parser(commands) -> None:
    search = commands.add_parser(
        "search", help="find sessions by their title, requests, id or agent (or --content)",
        description="Find sessions, newest first, in every project unless --local or --dir. By "
                    "default QUERY is matched against titles, first messages, every request the "
                    "user typed (of sessions rendered once), ids and agent names, which needs no "
                    "session to be read (fast). --content matches inside every step instead. The "
                    "ID column is what show and the memory mount's file names use.",
        epilog=EPILOGS["search"])
    search.add_argument("query", metavar="QUERY",
                        help="words that must all occur, case-insensitive (any order, within one "
                             "step with --content); a quoted phrase ('\"no such file\"', the "
                             "double quotes inside the single ones) occurs as written, "
                             "case-insensitive, inside one field (a title, a request; a message, "
                             "a tool call or a tool output with --content); '\\|' separates "
                             "alternatives: 'a b \\| c' finds (a and b) or c")
    search.add_argument("--content", action="store_true",
                        help="search inside every step of the sessions (messages, reasoning, tool-call "
                             "arguments, tool outputs, sub-agents included), as show and the mount "
                             "serve them, leaving out the steps an agent wrote for itself (--system); "
                             "one row per matching session: its best hit's snippet, every matching "
                             "step's number. Uses every core; rows are printed as they come, in "
                             "order (newest session first), and the result count comes last")
    search.add_argument("--phrase", action="store_true",
                        help="QUERY is one phrase, matched as written (case-insensitive), as if quoted")
    search.add_argument("--system", action="store_true",
                        help="with --content, search the steps an agent wrote for itself too (its "
                             "system prompt, instructions, skills, AGENTS.md and other injected "
                             "context, recorded as steps of source system); without it, the count "
                             "line says how many hits they held")
    search.add_argument("--regex", action="store_true",
                        help="QUERY is a regular expression (Python syntax, case-insensitive)")
    where = search.add_mutually_exclusive_group()
    where.add_argument("--local", action="store_true",
                       help="only sessions of the current project (the git work tree around the "
                            "current directory, or the directory itself)")
    where.add_argument("--dir", metavar="P", help="only sessions of project directory P")
    _filter_options(search)
    search.add_argument("--limit", type=int, default=50, metavar="N",
                        help="print at most N results, sessions with --content (default 50; 0 "
                             "prints them all); a last line says how many more there are")
    search.add_argument("--offset", type=int, default=0, metavar="N",
                        help="skip the first N results (to page: --offset 50, --offset 100, ...)")
    search.add_argument("--json", action="store_true",
                        help="one JSON object per result, for scripts (with --content, one per "
                             "matching step of the sessions listed; notes go to stderr)")
    _redaction_option(search)


def _stats_parser(commands) -> None:
    stats = commands.add_parser(
        "stats", help="sessions, steps, tool calls and tokens per agent", epilog=EPILOGS["stats"],
        description="Per agent and overall: sessions, steps, tool calls, prompt / cached / "
                    "completion tokens, cost, and tokens per trajectory (median, p90, max), all "
                    "read from the ATIF documents' final_metrics. Every project unless --local "
                    "or --dir. Sessions translated before are not translated again unless they "
                    "changed; the others are translated on every core.")
    where = stats.add_mutually_exclusive_group()
    where.add_argument("--all", action="store_true", help="sessions of every project (the default)")
    where.add_argument("--local", action="store_true", help="only sessions of the current project")
    where.add_argument("--dir", metavar="P", help="only sessions of project directory P")
    _filter_options(stats)
    stats.add_argument("--json", action="store_true", help="one JSON object, for scripts")


def _export_parser(commands) -> None:
    export = commands.add_parser(
        "export", help="write the memory files to a directory (no FUSE needed)", epilog=EPILOGS["export"],
        description="Write exactly the files the memory mount would show, with its README.md and INDEX.md, "
                    "into a plain directory: the way to use trajectoriz where FUSE is missing "
                    "(CI containers). Files are added and updated; nothing is removed unless "
                    "--delete says so, and files export did not write are never touched.")
    _scope_options(export)
    export.add_argument("--out", required=True, metavar="DIR", help="directory to write (created if missing)")
    export.add_argument("--delete", action="store_true",
                        help="also remove the files an earlier export wrote into DIR whose sessions "
                             "this export does not have (as rsync --delete)")
    _redaction_option(export)


def _agents_parser(commands) -> None:
    health = commands.add_parser(
        "agents", help="health report: which agent stores exist and how well they translate",
        epilog=EPILOGS["agents"],
        description="For every agent trajectoriz knows: where its store was found, how many "
                    "sessions and bytes of native data it holds, how many sessions translate "
                    "with warnings or fail (grouped by kind, with the first reason of each), and "
                    "which native formats and agent versions were seen. Every session is "
                    "translated, so this takes as long as exporting everything once. Use it "
                    "after an agent update, or when a session looks wrong in the mount.")
    health.add_argument("--json", action="store_true",
                        help="one JSON object per agent (all store paths, problem groups, counts)")


def _validate_parser(commands) -> None:
    check = commands.add_parser(
        "validate", help="check ATIF documents against the v1.7 spec", epilog=EPILOGS["validate"],
        description="Check ATIF documents (v1.0 to v1.7) against every rule of the spec; print "
                    "each violation with its JSON path. Exit 1 when any file is invalid.")
    check.add_argument("files", nargs="+", metavar="FILE", help="ATIF JSON files, e.g. memory/*.atif.json")
    check.add_argument("-q", "--quiet", action="store_true", help="print only problems, no line per valid file")


class Parser(argparse.ArgumentParser):
    """The program's parsers and its commands': their help as HelpFormatter lays it out."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, formatter_class=HelpFormatter, **kwargs)


class HelpFormatter(argparse.HelpFormatter):
    """Fills a one-paragraph text (a description) to the terminal's width, and keeps a text laid
    out in lines (a command's examples and notes) as it is."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        width = terminal_columns() - 2 if width is None else width  # as argparse's own
        super().__init__(prog, indent_increment, max_help_position, width)

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def terminal_columns() -> int:
    """The width shutil.get_terminal_size() gives ($COLUMNS, else the terminal's, else 80),
    which argparse asks for each option it adds: importing shutil for it costs a run more than
    building its parser."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


# Each command's examples and notes: its --help ends with them, and so does its part of the man page.
EPILOGS = {
    "list": """\
examples:
  trajectoriz list                        # this project's sessions, newest first
  trajectoriz list --all --agent claude   # every project, one agent
  trajectoriz list --steps                # with each session's steps and size
  trajectoriz list --json                 # one JSON object per session, for scripts

A session belongs to the project it was recorded in (the git work tree around its
working directory). When agents will delete, within a week, sessions not archived
yet, one line on stderr says how many (trajectoriz archive keeps them).""",
    "show": """\
examples:
  trajectoriz show cl-eb1c6529                       # the ATIF document (JSON)
  trajectoriz show cl-eb1c6529 --markdown --steps 1-50
  trajectoriz show cl-eb1c6529 --step 3              # one step, as one JSON object
  trajectoriz show cl-eb1c6529 --subagent 1 --markdown

Secrets are redacted unless --no-redact. The document is the memory mount's file
for the session, byte for byte.""",
    "search": """\
examples:
  trajectoriz search 'tokens per trajectory'
  trajectoriz search 'pytest \\| unittest' --local
  trajectoriz search --content '"from a function or sourced script"'
  trajectoriz search --content --regex 'Error: .*timeout' --since 7d
  trajectoriz search --content Traceback --agent codex --json

Exit status: 0 found, 1 nothing found, 2 error.""",
    "blame": """\
examples:
  trajectoriz blame src/app.py             # the sessions that wrote or edited it
  trajectoriz blame src/app.py:42          # the sessions whose edits wrote line 42 as it is now
  trajectoriz blame src/app.py --json

A line no session wrote is said to be so (a human wrote it): no false attribution.
Exit status: 0 found, 1 no session wrote it, 2 error.""",
    "stats": """\
examples:
  trajectoriz stats                       # every project
  trajectoriz stats --local --since 30d   # this project, the last 30 days
  trajectoriz stats --json                # one JSON object, for scripts""",
    "export": """\
examples:
  trajectoriz export --out memory         # this project's sessions, as the mount shows them
  trajectoriz export --all --out /tmp/all --delete
  grep -l pytest memory/*.atif.json

The files are owner-only (folders 0700, files 0600), as everything trajectoriz writes.""",
    "agents": """\
examples:
  trajectoriz agents                      # a table: stores, sessions, problems, retention
  trajectoriz agents --json               # one JSON object per agent

A store is found as its agent finds it: see ENVIRONMENT in the man page
(trajectoriz --man) for the variables that move each.""",
    "archive": """\
examples:
  trajectoriz archive                     # now: reads only what changed since the last run
  trajectoriz archive --schedule          # every day from now on
  trajectoriz archive --verify            # read every archived file back and check it

The archive is not a cache: it may hold the only copy of a session its agent deleted.
Copy its folder to keep your memory on a new machine.""",
    "forget": """\
examples:
  trajectoriz forget cl-eb1c6529
  trajectoriz forget --before 2025-01-01

Delete the session from its agent's store too: trajectoriz never writes there.""",
    "push": """\
examples:
  trajectoriz push --remote origin        # the first time: names the remote, kept for later
  trajectoriz push --dry-run              # what would go: sessions, sizes, redactions
  trajectoriz push                        # after a session: sends what changed

Whoever can fetch from the remote can read the pushed sessions (redacted): a private
remote of their own is the safer choice. `trajectoriz forget ID` keeps a session out
of every later push.""",
    "pull": """\
examples:
  trajectoriz pull                        # the team's sessions, from the remote push uses
  trajectoriz pull --remote origin
  trajectoriz list                        # with theirs, and who shared each

In CI: `trajectoriz pull` before the agent runs, `trajectoriz push` after.""",
    "resume": """\
examples:
  trajectoriz resume cl-eb1c6529            # claude --resume <its id>, in its directory
  trajectoriz resume cx-1a2b3c4d --print    # the command line, to run yourself
  trajectoriz resume cl-eb1c6529 --prompt 'run the tests again'
  trajectoriz resume cl-eb1c6529 --restore  # archived only: put its file back first
  trajectoriz resume cl-eb1c6529 -- --model opus   # after --: the agent's own arguments

Exit status: 0 (or the agent's own), 2 when it cannot be resumed (the line says why and
names the handoff that works).""",
    "handoff": """\
examples:
  trajectoriz handoff cl-eb1c6529 --to codex
  trajectoriz handoff cx-1a2b3c4d --to claude --print     # the command line and prompt
  trajectoriz handoff cl-eb1c6529 --to gemini --budget 2000 --task 'review the diff'
  trajectoriz handoff cl-eb1c6529 --to codex -- -m gpt-5   # after --: the agent's own arguments

The prompt is redacted like every output; still, read it (--print) before it goes to an
agent whose model runs elsewhere.""",
    "validate": """\
examples:
  trajectoriz validate memory/*.atif.json
  trajectoriz validate -q exported/*.atif.json   # only the problems

Exit status: 0 every file is valid, 1 some are not, 2 error.""",
}


MEMORY_DESCRIPTION = """\
Mount the sessions of the current project (its git work tree, or the current
directory; --dir P for another) as a read-only directory at MOUNTPOINT: by
default memory/ in the current project's root, from any of its subdirectories
(--status and --unmount look there too). It holds:

  README.md                        what the files hold, with jq recipes
  INDEX.md                         one line per session, newest first: file, date,
                                   agent, model, first request (and, once rendered,
                                   steps, tool calls, files changed)
  <date>_<agent>_<id>.atif.json    one ATIF v1.7 document per session,
                                   byte-identical to `trajectoriz show ID`

Listing translates nothing: a session is translated when its file is first stat'ed
or opened, and a walk over the files (`ls -l`, `grep -r`, `du`, `cat memory/*`) has
the rest translated ahead of it, on every core. Sizes are cached, so `ls -l`, `du`,
`cat`, `grep -r`, `rg`, `jq` and `cp` all see exact sizes and complete contents. A session still being recorded
shows its new steps the next time its file is opened; new sessions appear within
seconds. Only you can read the mount; writing fails with "Read-only file system".

The mount runs in the background until `trajectoriz memory --unmount`; its log is
under ${XDG_CACHE_HOME:-~/.cache}/trajectoriz. A mountpoint inside a git work tree
is added to .git/info/exclude (never to .gitignore)."""

EPILOGS["memory"] = """\
examples:
  trajectoriz memory                     # at memory/ in the work tree's root
  ls -l memory/ && jq '.final_metrics' memory/*_claude_*.atif.json
  trajectoriz memory --unmount           # also heals "Transport endpoint is not connected"

Needs FUSE: on Linux the fuse3 package (and /dev/fuse inside containers), on macOS
macFUSE or FUSE-T. Without it, `trajectoriz export --out DIR` writes the same files."""


def _blame_parser(commands) -> None:
    blame = commands.add_parser(
        "blame", help="which sessions wrote or edited a file (or one of its lines), and why",
        description="The sessions of this project (unless --all or --dir) whose tool calls wrote "
                    "or edited FILE, oldest first: each with its date, agent, id, the step, the "
                    "user's request that led to it and a short diff. With --line N (or FILE:N), "
                    "only the changes whose written text holds that line's current content, most "
                    "recent first; a line no session wrote is said to be so. The files each "
                    "session wrote are cached: a session is read again only when it changed.",
        epilog=EPILOGS["blame"])
    blame.add_argument("file", metavar="FILE", help="the file (FILE:N names line N)")
    blame.add_argument("--line", type=int, metavar="N", help="only the changes that wrote line N's current text")
    _scope_options(blame)
    blame.add_argument("--agent", metavar="NAME", help="only sessions of this agent (e.g. claude, codex)")
    blame.add_argument("--json", action="store_true", help="one JSON object per change, for scripts")


def _memory_parser(commands) -> None:
    memory = commands.add_parser(
        "memory", help="mount this project's sessions as a read-only memory/ directory (FUSE)",
        description=MEMORY_DESCRIPTION, epilog=EPILOGS["memory"])
    memory.add_argument("mountpoint", nargs="?", metavar="MOUNTPOINT",
                        help="where to mount (default: memory/ at the root of the current project, "
                             "its git work tree or the current directory; created if missing)")
    memory.add_argument("--dir", metavar="P", help="sessions of project directory P instead of the current one")
    mode = memory.add_mutually_exclusive_group()
    mode.add_argument("--foreground", action="store_true",
                      help="stay attached and serve from this process; Ctrl-C or SIGTERM unmounts")
    mode.add_argument("--unmount", action="store_true",
                      help="unmount MOUNTPOINT; also recovers a mount whose server died or hangs "
                           "(\"Transport endpoint is not connected\"), stopping that server")
    mode.add_argument("--status", action="store_true",
                      help="say whether MOUNTPOINT is mounted, stale or free, with the server's pid; "
                           "exit 0 only when it is mounted and answering")


def _archive_parser(commands) -> None:
    keep = commands.add_parser(
        "archive", help="keep every session in trajectoriz's archive, beyond its agent's clean-up",
        epilog=EPILOGS["archive"],
        description="Copy what every session needs to be translated again (its native files, "
                    "compressed; a database store's own rows) into ${XDG_DATA_HOME:-~/.local/"
                    "share}/trajectoriz/archive, so that list, show, search, export and the "
                    "memory mount still serve it after its agent deleted it (Claude Code and "
                    "Gemini CLI delete sessions after 30 days). Incremental: only what changed "
                    "since the last run is read; a mounted memory/ archives its project's "
                    "sessions as it sees them.")
    what = keep.add_mutually_exclusive_group()
    what.add_argument("--verify", action="store_true",
                      help="read every archived file back and check it; exit 1 when some are damaged")
    what.add_argument("--schedule", action="store_true",
                      help="run `trajectoriz archive` every day from now on (a systemd user timer, "
                           "else a crontab line)")
    what.add_argument("--unschedule", action="store_true", help="stop the daily run --schedule set up")
    keep.add_argument("--json", action="store_true", help="one JSON object summing up the run")


def _forget_parser(commands) -> None:
    forget = commands.add_parser(
        "forget", help="remove sessions from the archive and from every cache, for good",
        epilog=EPILOGS["forget"],
        description="Remove sessions from trajectoriz's archive and from its caches (documents, "
                    "search texts, facts, listings), and never archive or push them again (the "
                    "next push takes them out of your shared ref): the way to purge a secret. The "
                    "agents' own stores are not touched: a session its agent still holds is still "
                    "shown from there.")
    forget.add_argument("ids", nargs="*", metavar="ID", help="session ids, as list and search show them")
    forget.add_argument("--before", metavar="DATE",
                        help="also every session started before DATE (YYYY-MM-DD, an ISO time, or Nd)")


def _push_parser(commands) -> None:
    push = commands.add_parser(
        "push", help="share this project's sessions through its git remote (refs/trajectoriz/)",
        epilog=EPILOGS["push"],
        description="Write this project's sessions, as export writes them (always redacted) and "
                    "compressed, as git objects under refs/trajectoriz/<contributor> of its "
                    "repository (never a branch, a tag or the working tree), then push that ref to "
                    "the remote. Incremental: nothing new sends nothing. The ref is rewritten at "
                    "every push, so a forgotten session leaves it.")
    push.add_argument("--remote", metavar="NAME",
                      help="the git remote to push to, kept in the repository's git config "
                           "(trajectoriz.remote) for the next pushes and pulls; needed once")
    push.add_argument("--dry-run", action="store_true",
                      help="list what would be pushed (sessions, sizes, redactions) and write nothing")


def _pull_parser(commands) -> None:
    pull = commands.add_parser(
        "pull", help="fetch the sessions the team pushed, listed here from then on",
        epilog=EPILOGS["pull"],
        description="Fetch every contributor's refs/trajectoriz/ ref from the remote; their sessions "
                    "are then listed, searched, shown, exported, blamed and mounted with this "
                    "project's own, the contributor beside them. What was fetched is checked first: "
                    "what is not a session trajectoriz pushed is skipped with a warning.")
    pull.add_argument("--remote", metavar="NAME",
                      help="the git remote to fetch from (default: the one kept by push or pull --remote)")


def _resume_parser(commands) -> None:
    resume = commands.add_parser(
        "resume", help="reopen a session in the agent that recorded it", epilog=EPILOGS["resume"],
        description="Reopen a past session in its own agent, in the session's working directory, with "
                    "that agent's own resume command (README: Carry on). A session the agent no longer "
                    "holds (only in the archive) or one a teammate shared is carried over with "
                    "`trajectoriz handoff` instead.")
    _carry_options(resume)
    resume.add_argument("--prompt", metavar="TEXT",
                        help="send TEXT as one more request without the agent's interactive interface "
                             "(its non-interactive mode), then exit")
    resume.add_argument("--restore", action="store_true",
                        help="for a session only in the archive: put its archived files back where its "
                             "agent reads them (only creating missing files, byte-identical to the "
                             "archive; with --print, only say what would be written)")


def _carry_options(command: argparse.ArgumentParser) -> None:
    """What resume and handoff both take: the session, and --print."""
    command.add_argument("id", metavar="ID", help="session id, as list, search and the mount show it")
    command.add_argument("--print", action="store_true",
                         help="print the command line (with its prompt) instead of running it")


def _handoff_parser(commands) -> None:
    handoff = commands.add_parser(
        "handoff", help="carry a session over to another agent", epilog=EPILOGS["handoff"],
        description="Start AGENT in the session's working directory with a first prompt that carries "
                    "the session over: every request, the commits, files written and failed commands, "
                    "where it stopped, and where the whole session is. The prompt quotes the session "
                    "as history in one delimited block, redacted, within --budget tokens.")
    _carry_options(handoff)
    handoff.add_argument("--to", metavar="AGENT", required=True, help="the agent to start (e.g. claude, codex, gemini)")
    handoff.add_argument("--budget", type=int, default=4000, metavar="TOKENS",
                         help="the prompt's size in tokens, counted conservatively (3 bytes a token; default 4000)")
    handoff.add_argument("--task", metavar="TEXT",
                         help="what the new agent is asked to do (default: carry on where the session stopped)")
    handoff.add_argument("--headless", action="store_true",
                         help="run AGENT's non-interactive mode: it answers the prompt once and exits")


def _filter_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--agent", metavar="NAME", help="only sessions of this agent (e.g. claude, codex)")
    command.add_argument("--since", metavar="DATE",
                         help="only sessions started on or after DATE: YYYY-MM-DD (local day), an "
                              "ISO time, or Nd for N days ago")
    command.add_argument("--until", metavar="DATE",
                         help="only sessions started on or before DATE (YYYY-MM-DD includes that "
                              "whole day)")


def _scope_options(command: argparse.ArgumentParser) -> None:
    group = command.add_mutually_exclusive_group()
    group.add_argument("--all", action="store_true", help="sessions of every project")
    group.add_argument("--dir", metavar="P", help="sessions of project directory P instead of the current one")


def _redaction_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--no-redact", action="store_true",
        help="keep secrets as recorded in the documents (by default API keys, tokens, private "
             "keys, passwords and secret assignments become «REDACTED:<kind>:<hash>»); first "
             "messages in listings and search results are always redacted")


def _serve_parser(commands) -> None:
    serve = commands.add_parser(
        "serve", help="a read-only web view of the sessions, on this machine only",
        epilog=EPILOGS["serve"],
        description="Serve this project's sessions (or every project's) as web pages at "
                    "http://127.0.0.1: the list with filters and search, each session's page "
                    "(as show --html), INDEX.md's table and blame. It listens on 127.0.0.1 only, "
                    "and answers only requests that carry the random token of the URL it prints "
                    "and name it in their Host header; it only reads (GET and HEAD).")
    serve.add_argument("--port", type=int, default=0, metavar="N",
                       help="the port to listen on (default: a free one, printed with the URL)")
    _scope_options(serve)


EPILOGS["serve"] = """\
examples:
  trajectoriz serve                       # this project's sessions; open the URL it prints
  trajectoriz serve --all --port 8765     # every project, at a fixed port

The URL's token is the key: do not share it. Ctrl-C stops the server."""


# command -> what adds its parser, in the order of the program's help
COMMANDS = {"list": _list_parser, "show": _show_parser, "search": _search_parser, "stats": _stats_parser,
            "blame": _blame_parser, "export": _export_parser, "agents": _agents_parser,
            "memory": _memory_parser, "archive": _archive_parser, "forget": _forget_parser,
            "push": _push_parser, "pull": _pull_parser, "resume": _resume_parser, "handoff": _handoff_parser,
            "validate": _validate_parser, "serve": _serve_parser}

# command -> (module, function): each command's module is imported only when it runs
HANDLERS = {
    "list": ("commands.basics", "run_list"), "show": ("commands.basics", "run_show"),
    "export": ("commands.basics", "run_export"), "validate": ("commands.basics", "run_validate"),
    "search": ("commands.search", "run_search"), "blame": ("commands.blame", "run_blame"),
    "stats": ("commands.stats", "run_stats"), "agents": ("commands.health", "run"),
    "memory": ("mount.memory", "run_memory"), "archive": ("archiving.archiver", "run_archive"),
    "forget": ("archiving.forget", "run_forget"), "push": ("sharing.push", "run_push"),
    "pull": ("sharing.pull", "run_pull"), "resume": ("commands.carryon", "run_resume"),
    "handoff": ("commands.carryon", "run_handoff"), "serve": ("commands.serve", "run_serve"),
    "complete-ids": ("commands.completion", "run_ids"),  # what the completion scripts run: no parser, no help
}


def dispatch(args, env) -> int:
    import importlib

    module_name, function = HANDLERS[args.command]
    return getattr(importlib.import_module(module_name), function)(args, env)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["memory-worker"]:  # a mount's renderer (mount/warmup.py): no parser, no help
        from mount import warmup

        return warmup.run_worker(os.environ)
    if argv[:1] == ["complete-ids"]:
        return run(argparse.Namespace(command="complete-ids"))
    argv, agent_args = _agent_arguments(argv)
    parser = build_parser(argv[0] if argv[:1] and argv[0] in COMMANDS else None)
    if argv[:1] and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        parser.error(f"unknown command {argv[0]!r}{did_you_mean(argv[0], COMMANDS)} "
                     f"(commands: {', '.join(COMMANDS)})")
    args, extra = parser.parse_known_args(argv)
    args.agent_args = agent_args
    if extra:  # said by the command's own parser: its usage, not the whole program's
        after = args.command in argv and argv.index(extra[0]) > argv.index(args.command)
        said = parser.subcommands[args.command] if after else parser
        said.error(f"unrecognized arguments: {' '.join(extra)}"
                   f"{did_you_mean(extra[0], said._option_string_actions) if extra[0].startswith('--') else ''}")
    if args.man:
        from commands import manual

        return guarded(manual.run)
    if args.completion:
        from commands import completion

        return completion.run_script(args.completion, build_parser())
    if not args.command:
        parser.print_help()
        return EXIT_ERROR
    return run(args)


def did_you_mean(word: str, choices) -> str:
    """`; did you mean 'list'?` for the choice closest to a misspelled `word`, else ""."""
    import difflib

    close = difflib.get_close_matches(word, [c for c in choices if c != "complete-ids"], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _agent_arguments(argv: list) -> tuple[list, list]:
    """The arguments after `--` of the commands that start an agent (resume, handoff): the
    agent's own, passed on as they are."""
    if argv[:1] and argv[0] in ("resume", "handoff") and "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1:]
    return argv, []


def run(args) -> int:
    """The command `args` names, its failures said in one line."""
    return guarded(lambda: dispatch(args, os.environ))


def guarded(work) -> int:
    """work()'s exit status, its failures said in one line."""
    from core.errors import UserError

    try:
        return work()
    except UserError as exc:
        print(f"trajectoriz: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # the promise is one clear line, never a traceback
        if os.environ.get("TRAJECTORIZ_DEBUG"):
            raise
        print(f"trajectoriz: internal error: {type(exc).__name__}: {exc} "
              f"(set TRAJECTORIZ_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
