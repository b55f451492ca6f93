#!/usr/bin/env python3
"""`make bench`: how fast trajectoriz is on a heavy user's store, next to its predecessor.

    python bench/run.py [--full] [--runs N] [--tree DIR] [--no-predecessor] [--out FILE]

Builds the corpus (bench/make_corpus.py: --small by default, 5,000 sessions with --full) unless
it is already there for the same generator, then times every operation as separate processes:
each figure is the median of --runs runs, with the minimum and maximum. "Cold" means the
operation's caches were deleted before each run (trajectoriz's under $XDG_CACHE_HOME, the
predecessor's under ~/.cache/trajectoriz); the page cache is warm in every run (the corpus was
just written or read). Peak RSS is the child's ru_maxrss (os.wait4).

The predecessor (`trajectoriz-cli`, PyPI trajectoriz==0.10003.0) is installed into
bench/.venv-predecessor (never into .venv: its package `trajectoriz` would shadow
trajectoriz.py), with fusepy for its mount (which needs libfuse 2: apt install libfuse2). It
reads the same $HOME. Ratios are ours/theirs: below 1 means trajectoriz is faster.

Results go to bench/RESULTS.md (or --out), with the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PREDECESSOR = "trajectoriz==0.10003.0"
PREDECESSOR_VENV = os.path.join(BENCH, ".venv-predecessor")
CONTENT_QUERY = "note.txt"  # every session reads a note.txt: the hardest case, all match
FINAL_QUERY = "SCENARIO-DONE"  # in the final answer of every session recorded live (issue 37 item 7)
TITLE_QUERY = "checksum"    # one of the words make_corpus puts in first messages
BLAMED = "note.txt"         # every session writes a note.txt in its project


# measuring --------------------------------------------------------------------------------------------
class Timing:
    def __init__(self, seconds: list[float], rss_kb: list[int], failure: str = "", cpu: list[float] | None = None):
        self.seconds, self.rss_kb, self.failure, self.cpu = seconds, rss_kb, failure, cpu or []

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    def text(self) -> str:
        if self.failure:
            return f"failed: {self.failure}"
        low, high = min(self.seconds), max(self.seconds)
        return f"{fmt(self.median)} ({fmt(low)}–{fmt(high)})"

    def rss(self) -> str:
        return f"{max(self.rss_kb) / 1024:.0f} MB" if self.rss_kb else "—"


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def run_once(argv: list[str], env: dict, cwd: str | None = None, stdout=subprocess.DEVNULL,
             timeout: float = 3600) -> tuple[float, int, int, float]:
    """(wall seconds, peak RSS in KB, exit status, CPU seconds) of one run: the CPU time of the
    command and of the processes it waited for (its pool's workers)."""
    errors = tempfile.TemporaryFile()  # not a pipe: a daemon the command starts keeps it open
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=stdout, stderr=errors)
    deadline = started + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            raise RuntimeError(f"timed out after {timeout:.0f} s")
        time.sleep(0.002)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    errors.seek(0)
    error = errors.read().decode(errors="replace")
    errors.close()
    if child.returncode not in (0, 1):
        raise RuntimeError(f"exit {child.returncode}: {error.strip()[-300:]}")
    return elapsed, usage.ru_maxrss, child.returncode, usage.ru_utime + usage.ru_stime


def measure(argv, env, runs: int, before=None, cwd=None) -> Timing:
    timing = Timing([], [])
    for _ in range(runs):
        if not add_run(timing, argv, env, before, cwd):
            break
    return timing


def add_run(timing: Timing, argv, env, before=None, cwd=None) -> bool:
    """One more run into `timing` (`before()` first); False, and the failure noted, if it failed."""
    try:
        if before:
            before()
        elapsed, peak, _, used = run_once(argv, env, cwd)
    except (RuntimeError, OSError) as exc:
        timing.failure = str(exc)
        return False
    timing.seconds.append(elapsed)
    timing.rss_kb.append(peak)
    timing.cpu.append(used)
    return True


def timed_shell(command: str, env: dict, runs: int, before=None, cwd=None) -> Timing:
    return measure(["/bin/sh", "-c", command], env, runs, before, cwd)


# the two programs ---------------------------------------------------------------------------------------
class Program:
    """How to run one implementation against the corpus, and how to empty its caches."""

    def __init__(self, name: str, argv: list[str], env: dict, cache: str):
        self.name, self.argv, self.env, self.cache = name, argv, env, cache

    def cmd(self, *args: str) -> list[str]:
        return self.argv + list(args)

    def clear(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)


def clean_env(home: str, **extra) -> dict:
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TERM") if k in os.environ}
    return {**keep, "HOME": home, **extra}


def ours(tree: str, corpus: str, python: str) -> Program:
    cache = os.path.join(corpus, "cache-ours")
    env = clean_env(os.path.join(corpus, "home"), XDG_CACHE_HOME=cache)
    return Program("trajectoriz", [python, os.path.join(tree, "trajectoriz.py")], env, os.path.join(cache, "trajectoriz"))


def predecessor(corpus: str) -> Program | None:
    cli = os.path.join(PREDECESSOR_VENV, "bin", "trajectoriz-cli")
    if not os.path.exists(cli):
        print(f"installing the predecessor ({PREDECESSOR}) into {PREDECESSOR_VENV}", file=sys.stderr)
        try:
            subprocess.run([sys.executable, "-m", "venv", PREDECESSOR_VENV], check=True)
            subprocess.run([os.path.join(PREDECESSOR_VENV, "bin", "pip"), "install", "-q",
                            "--disable-pip-version-check", PREDECESSOR, "fusepy"], check=True)
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"cannot install the predecessor: {exc}", file=sys.stderr)
            return None
    home = os.path.join(corpus, "home")
    return Program("trajectoriz-cli", [cli], clean_env(home), os.path.join(home, ".cache", "trajectoriz"))


# the corpus -------------------------------------------------------------------------------------------
def corpus_for(args) -> str:
    """The corpus folder, (re)built when missing or made by another version of the generator."""
    name = "huge" if args.huge else "claude" if args.claude else "full" if args.full else "small"
    out = os.path.join(BENCH, "corpus", name)
    with open(os.path.join(BENCH, "make_corpus.py"), "rb") as handle:
        import hashlib
        stamp = hashlib.sha256(handle.read()).hexdigest()[:16] + ":" + name
    stamp_file = os.path.join(out, ".stamp")
    if os.path.exists(stamp_file) and open(stamp_file).read() == stamp:
        settle(out)
        return out
    command = [sys.executable, os.path.join(BENCH, "make_corpus.py"), "--out", out] + (
        ["--huge"] if args.huge else ["--claude"] if args.claude else [] if args.full else ["--small"])
    print("building the corpus:", " ".join(command[1:]), file=sys.stderr)
    subprocess.run(command, check=True)
    with open(stamp_file, "w") as handle:
        handle.write(stamp)
    settle(out)
    return out


SETTLED_AGE = 86400  # seconds: how long ago the corpus' sessions last changed


def settle(corpus: str) -> None:
    """Date every file and folder of the corpus' $HOME a day back, once: a corpus just written
    would be a store whose every session is being recorded (the mount treats a session changed
    in the last ten minutes as live), where a real one has a few such among thousands."""
    marker = os.path.join(corpus, ".settled")
    if os.path.exists(marker):
        return
    when = time.time() - SETTLED_AGE
    for folder, _, files in os.walk(os.path.join(corpus, "home"), topdown=False):
        for name in files:
            os.utime(os.path.join(folder, name), (when, when), follow_symlinks=False)
        os.utime(folder, (when, when))
    open(marker, "w").close()


def corpus_facts(corpus: str) -> dict:
    with open(os.path.join(corpus, "corpus.json")) as handle:
        return json.load(handle)


def main_project(facts: dict) -> tuple[str, int]:
    counts: dict = {}
    for copy in facts["copies"]:
        counts[copy["cwd"]] = counts.get(copy["cwd"], 0) + 1
    project = max(counts, key=counts.get)
    return project, counts[project]


# the machine --------------------------------------------------------------------------------------------
def machine() -> list[str]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), cpu)
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as handle:
            kb = int(handle.readline().split()[1])
        memory = f"{kb / 1024 / 1024:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return [f"CPU: {cpu}, {os.cpu_count()} cores; {memory}",
            f"Python {platform.python_version()}, kernel {platform.release()} ({platform.system()})",
            f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"]


def load() -> str:
    try:
        return open("/proc/loadavg").read().split(" ")[:3].__str__()
    except OSError:
        return "unknown"


# report -------------------------------------------------------------------------------------------------
class Report:
    def __init__(self):
        self.sections: list[tuple[str, list[str], list[list[str]], list[str]]] = []

    def section(self, title: str, header: list[str], notes: list[str] | None = None) -> list[list[str]]:
        rows: list[list[str]] = []
        self.sections.append((title, header, rows, notes or []))
        return rows

    def markdown(self, intro: list[str]) -> str:
        out = intro[:]
        for title, header, rows, notes in self.sections:
            out += ["", f"## {title}", ""]
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "---|" * len(header))
            out += ["| " + " | ".join(row) + " |" for row in rows]
            if notes:
                out += [""] + notes
        return "\n".join(out) + "\n"


def ratio(mine: Timing, theirs: Timing | None) -> str:
    if theirs is None or theirs.failure or mine.failure or not theirs.median:
        return "—"
    return f"{mine.median / theirs.median:.2f}"


# the benchmarks -----------------------------------------------------------------------------------------
def both(rows, label, me, them, args_me, args_them, runs, cold, cwd=None) -> tuple[Timing, Timing | None]:
    """One row: the same operation for both programs, cold (caches emptied before each run) or
    warm (primed by one unmeasured run). Their runs alternate, so that the machine's speed,
    which drifts by tens of percent over minutes on a shared host, weighs on both alike."""
    sides = [(program, program.cmd(*argv)) for program, argv in ((me, args_me), (them, args_them))
             if program is not None and argv is not None]
    if not cold:
        for program, argv in sides:
            try:
                run_once(argv, program.env, cwd)
            except (RuntimeError, OSError):
                pass
    timings = [Timing([], []) for _ in sides]
    for _ in range(runs):
        for (program, argv), timing in zip(sides, timings):
            if not timing.failure:
                add_run(timing, argv, program.env, program.clear if cold else None, cwd)
    mine, theirs = timings[0], (timings[1] if len(timings) > 1 else None)
    rows.append([label, mine.text(), theirs.text() if theirs else "—", ratio(mine, theirs)])
    return mine, theirs


def bench_discovery(report, me, them, project, project_count, native_bytes, runs, first_content_runs=None,
                    their_first_content=True) -> dict:
    """`first_content_runs`: runs of the first `search --content` (a heavy user's corpus takes
    minutes per run); `their_first_content`: whether the predecessor's `search --content` is
    measured too (on a heavy user's corpus the index it builds first takes over 24 minutes,
    and no target compares it)."""
    notes = [
        "Cold: every cache deleted before each run. `list` of trajectoriz prints each session's step "
        "count, so a cold `list` translates every listed session (in a process pool); the "
        "predecessor's `list` reads heads only. `search --content` of the predecessor builds a SQLite "
        "FTS index the first time (the cold figure) and queries it afterwards; trajectoriz "
        "translates and searches every session the first time, keeping each document and its "
        "search text in its cache, and afterwards reads the search texts, on every core. Query "
        f"for the default search: `{TITLE_QUERY}`; for --content: `{CONTENT_QUERY}` (in every "
        "session)."]
    rows = report.section("Discovery and search", ["Operation", "trajectoriz", "trajectoriz-cli", "ours/theirs"], notes)
    found = {}
    for cold in (True, False):
        state = "cold" if cold else "warm"
        found[f"list-all-{state}"] = both(rows, f"`list --all`, {state}", me, them, ["list", "--all"], ["list", "--all"], runs, cold)
    for cold in (True, False):
        state = "cold" if cold else "warm"
        found[f"list-{state}"] = both(rows, f"`list` in a project of {project_count} sessions, {state}", me, them,
                                      ["list"], ["list"], runs, cold, cwd=project)
    for cold in (True, False):
        state = "cold" if cold else "warm"
        found[f"search-{state}"] = both(rows, f"default `search`, {state}", me, them, ["search", TITLE_QUERY],
                                        ["search", TITLE_QUERY], runs, cold)
    for cold in (True, False):
        state = "first time" if cold else "after"
        found[f"content-{'cold' if cold else 'warm'}"] = both(
            rows, f"`search --content`, {state}", me, them if their_first_content else None,
            ["search", "--content", CONTENT_QUERY],
            ["search", "--content", CONTENT_QUERY], (first_content_runs or runs) if cold else runs, cold)
    for key, where, cwd in (("content-final-warm", "every project", None),
                            ("content-final-local-warm", f"`--local`, a project of {project_count} sessions", project)):
        local = ["--local"] if cwd else []
        found[key] = both(rows, f"`search --content {FINAL_QUERY}`, after, {where}", me,
                          them if their_first_content else None,
                          ["search", "--content", FINAL_QUERY, *local], ["search", "--content", FINAL_QUERY, *local],
                          runs, False, cwd=cwd)
    notes.append(f"`{FINAL_QUERY}` (issue 37): in the final answer of every session recorded live (all of "
                 "the Claude corpus), a step or a few of each: the predecessor's index answers it at a "
                 "small fixed cost, and every session matches, so each printed row's document is read.")
    notes.append(content_throughput(found, native_bytes))
    return found


def content_throughput(found: dict, native_bytes: int) -> str:
    """`search --content` as MB of native data searched per second of wall time."""
    def rate(timing) -> str:
        return "—" if timing is None or timing.failure else f"{native_bytes / 1e6 / timing.median:.0f} MB/s"
    parts = [f"{label} {rate(found[key][0])} (trajectoriz-cli {rate(found[key][1])})"
             for key, label in (("content-cold", "first time"), ("content-warm", "after"))]
    return "`search --content` throughput, native data searched per second: " + ", ".join(parts) + "."


THROUGHPUT = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import agents
from discovery import catalog
from rendering import documents
env = dict(os.environ)
redact = sys.argv[2] == "redact"
sessions = catalog.discover(env).sessions
by_agent = {}
for session in sessions:
    by_agent.setdefault(session.agent, []).append(session)
found, largest = {}, (0, None)
for agent, group in sorted(by_agent.items()):
    module = agents.load(agent)
    files = set()
    for session in group:
        deps = [f for f in catalog.dependencies(module, session.source, env) if os.path.isfile(f)]
        files.update(deps)
        if os.path.isfile(session.source) and not session.source.endswith((".db", ".sqlite")):
            size = sum(os.path.getsize(f) for f in deps)
            largest = max(largest, (size, session.short_id, session.source))
    native = sum(os.path.getsize(f) for f in files)
    started = time.process_time()
    out = 0
    for session in group:  # translated, never read from the document cache
        out += len(documents._rendered(session, env, redact)[1])
    found[agent] = [len(group), native, time.process_time() - started, out]
print(json.dumps({"agents": found, "largest": largest}))
"""


def throughput(me: Program, tree: str, redact: bool) -> dict:
    result = subprocess.run(me.argv[:1] + ["-c", THROUGHPUT, tree, "redact" if redact else "keep"],
                            env=me.env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def bench_translation(report, me, tree, runs) -> dict:
    rows = report.section("Translation throughput (one core)", [
        "Agent", "Sessions", "Native input", "CPU time", "MB/s per core", "MB/s, --no-redact"], [
        "Every session of the agent translated to its (redacted) document in one process "
        "(`documents._rendered`: translation, serialization, redaction; never the document "
        "cache), the median CPU time of the runs. Native input: the bytes of "
        "the files each session's translation depends on (a shared database counted once)."])
    runs = max(1, min(runs, 3))
    redacted = [throughput(me, tree, True) for _ in range(runs)]
    kept = [throughput(me, tree, False) for _ in range(runs)]
    total = [0, 0, 0.0, 0.0]
    for agent in sorted(redacted[0]["agents"]):
        count, native = redacted[0]["agents"][agent][:2]
        cpu = statistics.median(r["agents"][agent][2] for r in redacted)
        cpu_kept = statistics.median(r["agents"][agent][2] for r in kept)
        total = [total[0] + count, total[1] + native, total[2] + cpu, total[3] + cpu_kept]
        rows.append([agent, str(count), mb(native), f"{cpu:.2f} s", speed(native, cpu), speed(native, cpu_kept)])
    rows.append(["**all**", str(total[0]), mb(total[1]), f"{total[2]:.2f} s", speed(total[1], total[2]),
                 speed(total[1], total[3])])
    return {"largest": redacted[0]["largest"], "cpu": total[2], "cpu_kept": total[3],
            "speed": total[1] / 1e6 / total[2] if total[2] else 0.0}


def mb(size: float) -> str:
    return f"{size / 1e6:.1f} MB"


def speed(size: float, seconds: float) -> str:
    return f"{size / 1e6 / seconds:.0f}" if seconds > 0 else "—"


def predecessor_id(agent: str, source: str) -> str | None:
    """The predecessor's id of a file-based session: a prefix and sha256 of the path."""
    import hashlib

    prefix = {"claude": "cl", "codex": "cx", "copilot": "cp"}.get(agent)
    return f"{prefix}-{hashlib.sha256(source.encode()).hexdigest()[:8]}" if prefix else None


def bench_show(report, me, them, largest, runs) -> dict:
    size, short_id, source = largest
    agent = {"cl": "claude", "cx": "codex", "cp": "copilot"}.get(short_id.split("-")[0], "")
    theirs_id = predecessor_id(agent, source)
    rows = report.section(f"`show` of the largest session ({short_id}, {mb(size)} native)",
                          ["Operation", "trajectoriz", "peak RSS", "trajectoriz-cli", "peak RSS", "ours/theirs"], [
        "trajectoriz prints the whole ATIF document (JSON) or, with --markdown, the whole "
        "transcript; the predecessor prints its markdown, `--full` for all steps. Cold: both "
        "programs' caches deleted before each run (so the session is translated); warm: "
        "trajectoriz reads the document cache, the predecessor its pickled parse."])
    found = {}
    for label, mine_args, their_args, cold in (
            ("`show ID` (JSON) / `show ID --full`, cold", ["show", short_id], ["show", theirs_id, "--full"], True),
            ("`show ID --markdown` / `show ID`, cold", ["show", short_id, "--markdown"], ["show", theirs_id], True),
            ("`show ID` (JSON) / `show ID --full`, warm", ["show", short_id], ["show", theirs_id, "--full"], False)):
        mine = measure(me.cmd(*mine_args), me.env, runs, me.clear if cold else None)
        theirs = None
        if them and theirs_id:
            theirs = measure(them.cmd(*their_args), them.env, runs, them.clear if cold else None)
        rows.append([label, mine.text(), mine.rss(), theirs.text() if theirs else "—",
                     theirs.rss() if theirs else "—", ratio(mine, theirs)])
        found[label] = (mine, theirs)
    return found


# the mount ----------------------------------------------------------------------------------------------
class Mount:
    """One implementation's FUSE mount of a project, started in the background."""

    def __init__(self, program: Program, point: str, project: str):
        self.program, self.point, self.project = program, point, project

    def start(self) -> None:
        os.makedirs(self.point, exist_ok=True)
        run_once(self.program.cmd("memory", self.point, "--dir", self.project), self.program.env, timeout=300)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if os.path.ismount(self.point) and os.listdir(self.point):
                return
            time.sleep(0.05)
        raise RuntimeError("the mount did not come up")

    def stop(self) -> None:
        if not os.path.ismount(self.point):
            return
        try:
            run_once(self.program.cmd("memory", "--unmount", self.point), self.program.env, timeout=60)
        except (RuntimeError, OSError):
            pass
        for tool in ("fusermount3", "fusermount"):
            if os.path.ismount(self.point) and shutil.which(tool):
                subprocess.run([tool, "-u", "-z", self.point], capture_output=True)
        deadline = time.monotonic() + 10
        while os.path.ismount(self.point) and time.monotonic() < deadline:
            time.sleep(0.05)

    def server_rss(self) -> tuple[float, float] | None:
        """VmRSS and VmHWM (MB) of the process serving the mount, found by its command line."""
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    argv = handle.read().split(b"\0")
                if self.point.encode() not in argv or b"memory" not in argv:
                    continue
                with open(f"/proc/{pid}/status") as handle:
                    status = dict(line.split(":", 1) for line in handle if ":" in line)
            except OSError:
                continue
            return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024
        return None


def mount_problem(program: Program, tree: str | None) -> str | None:
    if program is None:
        return "not measured (the predecessor is not installed, or not run on this corpus)"
    if tree is not None and not any(os.path.exists(os.path.join(tree, *place)) for place in (("memory.py",), ("mount", "memory.py"))):
        return "not available: this tree has no mount/memory.py (the mount is not merged yet)"
    if tree is None:
        probe = subprocess.run([os.path.join(PREDECESSOR_VENV, "bin", "python"), "-c", "import fuse"],
                               capture_output=True, text=True)
        if probe.returncode:
            return "not available: fusepy finds no libfuse 2 (apt install libfuse2)"
    if not os.path.exists("/dev/fuse"):
        return "not available: no /dev/fuse"
    return None


def cycle(mount: Mount, command: str, runs: int) -> Timing:
    """`command` right after a fresh mount with empty caches, `runs` times."""
    seconds = []
    try:
        for _ in range(runs):
            mount.stop()
            mount.program.clear()
            mount.start()
            seconds.append(timed_shell(command, mount.program.env, 1).seconds[0])
    except (RuntimeError, OSError, IndexError) as exc:
        return Timing(seconds, [], str(exc))
    return Timing(seconds, [])


MOUNT_STEPS = (  # (key, cold: each run on a fresh mount with empty caches, command on the mount point)
    ("ls-cold", True, "ls -l {point} > /dev/null"),
    ("ls-warm", False, "ls -l {point} > /dev/null"),
    ("grep-cold", True, f"grep -rc '{CONTENT_QUERY}' {{point}} > /dev/null"),
    ("grep-warm", False, f"grep -rc '{CONTENT_QUERY}' {{point}} > /dev/null"),
)


CARD_STEPS = (  # (key, command), warm, on our mount only (the predecessor has no cards)
    ("cards-read", "cat {point}/*.card.md > /dev/null"),
    ("cards-stat", "stat {point}/*.card.md > /dev/null"),
    ("docs-stat", "stat -L {point}/*.atif.json > /dev/null"),
)


WARM_UP_SECONDS = 5  # before a warm step: two rescans of our mount (RESCAN_SECONDS 2) find every
# session unchanged, after which the kernel keeps their attributes (memoryfs)


def mount_figures(programs: dict, project: str, runs: int, scratch: str) -> dict:
    """Each program's mount figures (side -> Program in, side -> figures out). Both mounts are
    up at once and the programs' runs of each step alternate, as `both`'s do; a side that
    fails leaves the steps after with its error."""
    mounts = {side: Mount(program, os.path.join(scratch, program.name, "memory"), project)
              for side, program in programs.items()}
    found: dict = {side: {} for side in programs}

    def working() -> list:
        return [(found[side], mount) for side, mount in mounts.items() if "error" not in found[side]]

    try:
        for key, cold, command in MOUNT_STEPS:
            if not cold:  # after the warm-up: the cold step's mount has rendered everything, and
                time.sleep(WARM_UP_SECONDS)  # its rescans have found the sessions unchanged
                for figures, mount in working():
                    timed_shell(command.format(point=f"'{mount.point}'"), mount.program.env, 1)
            for _ in range(runs):
                for figures, mount in working():
                    mount_run(figures, key, mount, cold, command.format(point=f"'{mount.point}'"))
            if key == "ls-warm":
                for figures, mount in working():
                    figures["ls-floor"] = ls_floor(mount.point, mount.program.env, runs, scratch)
        for figures, mount in working():
            if os.path.exists(os.path.join(mount.point, ".atif")):  # ours: cards beside the documents
                for key, command in CARD_STEPS:
                    figures[key] = timed_shell(command.format(point=f"'{mount.point}'"), mount.program.env, runs)
        for figures, mount in working():
            mount_facts(figures, mount, runs)
    finally:
        for mount in mounts.values():
            mount.stop()
    return found


def mount_run(found: dict, key: str, mount: Mount, cold: bool, command: str) -> None:
    """One run of a step into found[key] (a fresh mount with empty caches first when `cold`)."""
    timing = found.setdefault(key, Timing([], []))
    one = cycle(mount, command, 1) if cold else timed_shell(command, mount.program.env, 1)
    timing.seconds += one.seconds
    if one.failure:
        timing.failure = found["error"] = one.failure


def mount_facts(found: dict, mount: Mount, runs: int) -> None:
    """`cat` of the largest file, the files and their bytes, the server's memory."""
    try:
        files = [os.path.join(mount.point, n) for n in os.listdir(mount.point) if n.endswith(".json")]
        biggest = max(files, key=os.path.getsize) if files else None
        found["cat"] = (timed_shell(f"cat '{biggest}' > /dev/null", mount.program.env, runs) if biggest
                        else Timing([], [], "no file"))
        found["files"] = (len(files), sum(os.path.getsize(f) for f in files))
        found["rss"] = mount.server_rss()
    except OSError as exc:
        found["error"] = str(exc)


def ls_floor(point: str, env: dict, runs: int, scratch: str) -> Timing:
    """`ls -l` of a folder in memory (tmpfs) holding empty files of the names the mount at
    `point` lists: what `ls` and the kernel cost for that many files, which no mount can go
    below."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else scratch
    folder = None
    try:
        names = os.listdir(point)
        folder = tempfile.mkdtemp(prefix="ls-floor-", dir=base)
        for name in names:
            open(os.path.join(folder, name), "wb").close()
        return timed_shell(f"ls -l '{folder}' > /dev/null", env, runs)
    except OSError as exc:
        return Timing([], [], str(exc))
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def bench_mount(report, me, them, project, tree, runs, scratch) -> dict:
    rows = report.section(f"The memory mount of one project ({os.path.basename(project)})",
                          ["Operation", "trajectoriz", "trajectoriz-cli", "ours/theirs"], [
        "Cold: the mount started with empty caches (size cache included) right before the "
        f"command. `grep -rc {CONTENT_QUERY}` reads every file whole. The export row is "
        "`grep -r` over the same files exported to disk (`trajectoriz export`)."])
    problems = {"ours": mount_problem(me, tree), "theirs": mount_problem(them, None)}
    programs = {side: program for side, program in (("ours", me), ("theirs", them)) if not problems[side]}
    print(f"  mount: {', '.join(p.name for p in programs.values())}", file=sys.stderr)
    figures = {"ours": {}, "theirs": {}, **mount_figures(programs, project, runs, scratch)}
    labels = (("ls-cold", "`ls -l`, cold"), ("ls-warm", "`ls -l`, warm"),
              ("ls-floor", "`ls -l` of as many empty files in memory (tmpfs): its floor"),
              ("cat", "`cat` of the largest file"),
              ("grep-cold", "`grep -r`, cold"), ("grep-warm", "`grep -r`, warm"),
              ("cards-read", "`cat *.card.md` (every card), warm"), ("cards-stat", "`stat *.card.md`, warm"),
              ("docs-stat", "`stat -L *.atif.json` (every document), warm"))
    for key, label in labels:
        cells = []
        for side in ("ours", "theirs"):
            value = figures[side].get(key)
            cells.append(value.text() if value else (problems[side] or figures[side].get("error", "—")))
        rows.append([label, *cells, ratio(figures["ours"][key], figures["theirs"].get(key))
                     if key in figures["ours"] and key in figures["theirs"] else "—"])
    rows.append(["files (bytes)", *[f"{f['files'][0]} ({mb(f['files'][1])})" if "files" in f else "—"
                                    for f in (figures["ours"], figures["theirs"])], ""])
    rows.append(["server RSS after reading everything",
                 *[f"{f['rss'][0]:.0f} MB (peak {f['rss'][1]:.0f} MB)" if f.get("rss") else "—"
                   for f in (figures["ours"], figures["theirs"])], ""])
    export_dir = os.path.join(scratch, "export")
    try:
        run_once(me.cmd("export", "--out", export_dir, "--dir", project), me.env, timeout=3600)
        exported = timed_shell(f"grep -rc '{CONTENT_QUERY}' '{export_dir}' > /dev/null", me.env, runs)
        rows.append(["`grep -r` over the exported files", exported.text(), "", ""])
    except (RuntimeError, OSError) as exc:
        rows.append(["`grep -r` over the exported files", f"failed: {exc}", "", ""])
    return figures


def bench_blame(report, me, project, tree, runs, scratch) -> None:
    """`blame` of the file every session of the corpus writes, and the mount's INDEX.md."""
    rows = report.section(f"`blame` and INDEX.md in one project ({os.path.basename(project)})",
                          ["Operation", "trajectoriz"], [
        f"`blame {BLAMED}` run in the project, whose sessions all write it (the hardest case: "
        "every session is read). Cold: caches deleted before each run, so every session of the "
        "project is rendered once (on every core) to learn the files it wrote; warm: from the "
        "cached lists, reading only the sessions that wrote the file (none for a file no session "
        "wrote: the cached lists alone). INDEX.md: its first read "
        "right after a mount with empty caches (no session rendered: the blank cells), then "
        "after every file of the mount was read once (every cell known)."])
    for cold in (True, False):
        if not cold:
            run_once(me.cmd("blame", BLAMED), me.env, cwd=project)
        timing = measure(me.cmd("blame", BLAMED), me.env, runs, me.clear if cold else None, project)
        rows.append([f"`blame {BLAMED}`, {'cold' if cold else 'warm'}", timing.text()])
    unwritten = measure(me.cmd("blame", "nothing-wrote-this.txt"), me.env, runs, None, project)
    rows.append(["`blame` of a file no session wrote, warm", unwritten.text()])
    problem = mount_problem(me, tree)
    if problem:
        rows.append(["INDEX.md", problem])
        return
    point = os.path.join(scratch, "index", "memory")
    mount = Mount(me, point, project)
    try:
        first = cycle(mount, f"cat '{point}/INDEX.md' > /dev/null", runs)
        rows.append(["INDEX.md, first read after a cold mount", first.text()])
        timed_shell(f"cat '{point}'/*.atif.json > /dev/null", me.env, 1)
        known = timed_shell(f"cat '{point}/INDEX.md' > /dev/null", me.env, runs)
        rows.append(["INDEX.md, every session rendered", known.text()])
    finally:
        mount.stop()


INDEX_BLANK = "are blank for"  # INDEX.md's note while some sessions' facts are not known


def bench_index(report, me, project, project_count, tree, runs, scratch) -> dict:
    """INDEX.md of a big project (issue 30): how long after a cold mount every session's facts
    are known (the mount's workers render the sessions on every core, started by the first
    read), against `grep -r` of the same cold mount (which renders them all too); then its
    first read from a fresh mount once the facts are kept."""
    rows = report.section(f"INDEX.md of a {project_count}-session project ({os.path.basename(project)})",
                          ["Operation", "trajectoriz"], [
        "Facts computed: from a fresh mount with empty caches, INDEX.md read until no cell is blank "
        "(its first read starts the workers; polled every 0.1 s). `grep -r`, cold: the same mount "
        "rendering every document for grep, today's cost of rendering them. Facts kept: a fresh "
        "mount, caches kept, INDEX.md read once."])
    problem = mount_problem(me, tree)
    if problem:
        rows.append(["INDEX.md", problem])
        return {}
    point = os.path.join(scratch, "index-big", "memory")
    mount = Mount(me, point, project)
    found = {"facts": Timing([], []), "grep": Timing([], []), "kept": Timing([], [])}
    complete = (f"until [ -s '{point}/INDEX.md' ] && ! grep -q '{INDEX_BLANK}' '{point}/INDEX.md'; "
                "do sleep 0.1; done")
    try:
        for _ in range(runs):  # alternating, as `both` does
            found["facts"].seconds += cycle(mount, complete, 1).seconds
            found["grep"].seconds += cycle(mount, f"grep -rc '{CONTENT_QUERY}' '{point}' > /dev/null", 1).seconds
            mount.stop()
            mount.start()
            found["kept"].seconds += timed_shell(f"cat '{point}/INDEX.md' > /dev/null", me.env, 1).seconds
    except (RuntimeError, OSError) as exc:
        rows.append(["INDEX.md", f"failed: {exc}"])
        return {}
    finally:
        mount.stop()
    rows.append([f"facts of {project_count} sessions computed after a cold mount (INDEX.md complete)", found["facts"].text()])
    rows.append(["`grep -r`, cold (every document rendered)", found["grep"].text()])
    rows.append(["INDEX.md, first read after a fresh mount, facts kept", found["kept"].text()])
    return found


def index_rows(found: dict, project_count: int) -> list[list[str]]:
    """Issue 30's INDEX.md targets."""
    if not found:
        return []
    facts, grep, kept = found["facts"], found["grep"], found["kept"]
    return [[f"INDEX.md's facts for {project_count} sessions, on every core: at most `grep -r` cold (rendering them)",
             f"{facts.median / grep.median:.2f} ({facts.text()} vs {grep.text()})", verdict(facts.median <= grep.median)],
            [f"INDEX.md's first read over {project_count} sessions, facts kept: at most 1 s", kept.text(),
             verdict(kept.median <= 1.0)]]


def bench_startup(report, me, tree, runs) -> None:
    rows = report.section("Start-up", ["Operation", "source tree", "binary"], [
        "The binary is `dist/trajectoriz` (`make build`); warm caches."])
    binary = os.path.join(tree, "dist", "trajectoriz")
    have_binary = os.access(binary, os.X_OK)
    for label, argv in (("`--version`", ["--version"]), ("default `search`", ["search", TITLE_QUERY])):
        source = measure(me.cmd(*argv), me.env, runs)
        built = measure([binary, *argv], me.env, runs) if have_binary else None
        rows.append([label, source.text(), built.text() if built else "not available: no dist/trajectoriz (make build)"])


def bench_redaction(report, me, translation, runs) -> dict:
    rows = report.section("Secret redaction (on by default)", ["Operation", "redacted", "--no-redact", "cost"], [
        "Target: redaction changes no benchmark by more than 10%. Measured cold (caches "
        "deleted before each run): only redacted renderings are cached, so a warm comparison "
        "would set a cache read against a translation."])
    cpu, cpu_kept = translation["cpu"], translation["cpu_kept"]
    rows.append(["translation of every session (CPU)", f"{cpu:.2f} s", f"{cpu_kept:.2f} s", pct(cpu, cpu_kept)])
    costs = {"translation": cpu / cpu_kept - 1 if cpu_kept else 0.0}
    short_id = translation["largest"][1]
    for key, label, argv in (("show", "`show` of the largest session, cold", ["show", short_id]),
                             ("search", "`search --content`, cold", ["search", "--content", CONTENT_QUERY])):
        with_ = measure(me.cmd(*argv), me.env, runs, me.clear)
        without = measure(me.cmd(*argv, "--no-redact"), me.env, runs, me.clear)
        rows.append([label, with_.text(), without.text(), pct(with_.median, without.median)])
        costs[key] = with_.median / without.median - 1
    return costs


def archive_folder(me: Program) -> str:
    return os.path.join(me.env["HOME"], ".local", "share", "trajectoriz", "archive")


def archive_run(me: Program) -> dict:
    """One `archive --json` run's summary."""
    done = subprocess.run(me.cmd("archive", "--json"), env=me.env, capture_output=True, check=True)
    return json.loads(done.stdout)


def folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names)


def grown_copy(source: str, size: int) -> bytes:
    """About `size` bytes of JSONL to append to a transcript: its own last records (whole lines),
    which compress as the rest of it does."""
    with open(source, "rb") as handle:
        handle.seek(max(0, os.path.getsize(source) - size))
        tail = handle.read()
    return tail.split(b"\n", 1)[-1] if b"\n" in tail[:-1] else tail


def bench_archive(report, me, largest, runs) -> dict:
    """The archive (issue 14): first run, a run with nothing new, an append; the archive folder
    lives in the corpus's $HOME while measured and is removed afterwards."""
    rows = report.section("Archive", ["Operation", "trajectoriz", "figure"], [
        "`trajectoriz archive` over the whole corpus: first run into an empty archive (native MB "
        "read and stored per second of wall time), a run with nothing new (fingerprints "
        "compared, nothing read), and a run after 1 MB was appended to the largest transcript "
        "(the bytes it read and the archive's growth). Target: a run with nothing new in at most "
        "1 s for 5,000 sessions."])
    folder = archive_folder(me)
    clear = lambda: shutil.rmtree(folder, ignore_errors=True)  # noqa: E731
    try:
        first = measure(me.cmd("archive"), me.env, max(1, min(runs, 3)), clear)
        summary = archive_run(me)  # the last first run left the archive: its totals
        native, stored = summary["archive_native_bytes"], summary["archive_stored_bytes"]
        rows.append(["first run", first.text(), f"{speed(native, first.median)} MB/s of native data"])
        rows.append(["archive size / native size", "—",
                     f"{mb(folder_bytes(folder))} / {mb(native)} = {folder_bytes(folder) / native:.3f}"
                     f" (data {stored / native:.3f})"])
        noop = measure(me.cmd("archive"), me.env, runs)
        rows.append([f"run with nothing new ({summary['sessions_seen']} sessions)", noop.text(), ""])
        appended = bench_append(me, largest, folder, runs)
        rows.append(["run after a 1 MB append to the largest transcript", appended["timing"].text(),
                     f"{mb(appended['read'])} read, the archive grew by {appended['grown'] / 1e3:.0f} kB"])
    finally:
        clear()
        try:
            os.rmdir(os.path.dirname(folder))  # trajectoriz's data folder, if the archive was all
        except OSError:
            pass
    return {"noop": noop, "sessions": summary["sessions_seen"]}


def bench_append(me: Program, largest, folder: str, runs: int) -> dict:
    """Each run appends 1 MB to the largest transcript, then archives; the transcript is put
    back (bytes and mtime) afterwards."""
    source = largest[2]
    original = os.stat(source)
    chunk = grown_copy(source, 1024 * 1024)
    seconds, read, grown = [], 0, 0
    try:
        for _ in range(max(1, min(runs, 3))):
            with open(source, "ab") as handle:
                handle.write(chunk)
            before = folder_bytes(folder)
            started = time.perf_counter()
            summary = archive_run(me)
            seconds.append(time.perf_counter() - started)
            read, grown = summary["bytes_native"], folder_bytes(folder) - before
    finally:
        with open(source, "r+b") as handle:
            handle.truncate(original.st_size)
        os.utime(source, ns=(original.st_atime_ns, original.st_mtime_ns))
    return {"timing": Timing(seconds, []), "read": read, "grown": grown}


def pct(with_: float, without: float) -> str:
    return f"{(with_ / without - 1) * 100:+.0f}%" if without else "—"


# targets (issue 19) ------------------------------------------------------------------------------------
def at_most(label: str, mine, theirs, bound: float) -> list[str]:
    """A row of ours/theirs against `bound`."""
    if mine is None or theirs is None or mine.failure or theirs.failure or not theirs.median:
        return [f"{label}: ours/theirs at most {bound}", "—", verdict(None)]
    value = mine.median / theirs.median
    return [f"{label}: ours/theirs at most {bound}", f"{value:.2f} ({fmt(mine.median)} vs {fmt(theirs.median)})",
            verdict(value <= bound, f"{value / bound:.1f}x the bound")]


def issue19_rows(discovery, show, mount, export, project_count) -> list[list[str]]:
    """Every operation the predecessor has at most as slow as its; the warm searches and a cold
    `grep -r` over the mount twice as fast; a cold export on every core."""
    rows = []
    labels = {"list-all": "`list --all`", "list": f"`list` ({project_count} sessions)", "search": "default `search`",
              "content": "`search --content`"}
    for key, label in labels.items():
        for state in ("cold", "warm"):
            rows.append(at_most(f"{label}, {state}", *discovery[f"{key}-{state}"], 1.0))
    for label, (mine, theirs) in show.items():
        rows.append(at_most(label, mine, theirs, 1.0))
    ours_m, theirs_m = mount.get("ours", {}), mount.get("theirs", {})
    for key, label in (("ls-cold", "mount `ls -l`, cold"), ("ls-warm", "mount `ls -l`, warm"),
                       ("grep-cold", "mount `grep -r`, cold"), ("grep-warm", "mount `grep -r`, warm")):
        rows.append(at_most(label, ours_m.get(key), theirs_m.get(key), 1.0))
        floors = [m.get("ls-floor") for m in (ours_m, theirs_m)]
        if key == "ls-warm" and all(f and not f.failure for f in floors):
            rows[-1][1] += (f"; the floor, `ls -l` of as many empty files in memory: {fmt(floors[0].median)} "
                            f"vs {fmt(floors[1].median)}")
    rows.append(at_most("default `search`, warm", *discovery["search-warm"], 0.5))
    rows.append(at_most("`search --content`, warm", *discovery["content-warm"], 0.5))
    rows.append(at_most(f"`search --content {FINAL_QUERY}`, warm", *discovery["content-final-warm"], 0.5))
    rows.append(at_most(f"`search --content {FINAL_QUERY} --local`, warm", *discovery["content-final-local-warm"], 0.5))
    rows.append(at_most("mount `grep -r`, cold", ours_m.get("grep-cold"), theirs_m.get("grep-cold"), 0.5))
    rows.append(export_row(export))
    return rows


def issue36_rows(mount: dict) -> list[list[str]]:
    """With cards and transcripts beside the documents: warm `ls -l` no slower than the
    predecessor's, warm `grep -r` twice as fast, every card read warm within 100 ms."""
    ours_m, theirs_m = mount.get("ours", {}), mount.get("theirs", {})
    rows = [at_most("mount `ls -l`, warm (issue 36)", ours_m.get("ls-warm"), theirs_m.get("ls-warm"), 1.0),
            at_most("mount `grep -r`, warm (issue 36)", ours_m.get("grep-warm"), theirs_m.get("grep-warm"), 0.5)]
    cards = ours_m.get("cards-read")
    if cards is None or cards.failure or not cards.seconds:
        rows.append(["every card read, warm: at most 100 ms", "not measured", "—"])
    else:
        rows.append(["every card read, warm: at most 100 ms", fmt(cards.median), verdict(cards.median <= 0.1)])
    return rows


def export_row(export) -> list[str]:
    label = "cold `export --all`: wall time at most 0.6 of its CPU time"
    if export is None or export.failure or not export.cpu:
        return [label, "—", verdict(None)]
    share = export.median / statistics.median(export.cpu)
    return [label, f"{share:.2f} ({fmt(export.median)} wall, {fmt(statistics.median(export.cpu))} CPU)",
            verdict(share <= 0.6, f"{share / 0.6:.1f}x the bound")]


def huge_rows(discovery, native_bytes: int, project_count: int, mount: dict) -> list[list[str]]:
    """The heavy user's targets (`--huge`)."""
    rows = [at_most("`list --all`, cold", *discovery["list-all-cold"], 1.0),
            at_most("`list --all`, warm", *discovery["list-all-warm"], 0.5),
            at_most(f"`list` of a {project_count}-session project, warm", *discovery["list-warm"], 0.5)]
    mine = discovery["list-warm"][0]
    rows.append([f"`list` of a {project_count}-session project, warm: under 0.3 s", mine.text(),
                 verdict(mine.median < 0.3 if not mine.failure else None)])
    rows.append(at_most("default `search`, warm", *discovery["search-warm"], 0.5))
    peaks = [(max(m.rss_kb) / 1024, key) for key, (m, _) in discovery.items() if m and m.rss_kb]
    peak, where = max(peaks) if peaks else (None, "")
    rows.append(["peak RSS of any command: at most 300 MB", f"{peak:.0f} MB ({where})" if peak else "—",
                 verdict(peak <= 300 if peak else None)])
    server = mount.get("rss")
    rows.append([f"peak RSS of the mount server (a {project_count}-session project, every file read): at most 300 MB",
                 f"{server[1]:.0f} MB" if server else mount.get("error", "—"), verdict(server[1] <= 300 if server else None)])
    first = discovery["content-cold"][0]
    rate = native_bytes / 1e6 / first.median / cores() if first.seconds else None
    rows.append(["`search --content`, first run: at least 60 MB/s of native data per core",
                 f"{rate:.0f} MB/s per core ({cores()} cores)" if rate else "—", verdict(rate >= 60 if rate else None)])
    return rows


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def bench_export(report, me, runs, scratch) -> Timing:
    """Cold `export --all` (issue 19): its wall time against the CPU time of it and its workers."""
    rows = report.section("Export", ["Operation", "wall", "CPU", "wall/CPU"], [
        f"`export --all` into an empty folder, every cache deleted before each run; CPU: the "
        f"command's and its pool's workers' ({cores()} cores). Target: wall at most 0.6 of CPU."])
    out = os.path.join(scratch, "export-all")

    def fresh() -> None:
        me.clear()
        shutil.rmtree(out, ignore_errors=True)
    done = measure(me.cmd("export", "--all", "--out", out), me.env, runs, fresh)
    shutil.rmtree(out, ignore_errors=True)
    cpu = statistics.median(done.cpu) if done.cpu else None
    rows.append(["`export --all`, cold", done.text(), fmt(cpu) if cpu else "—",
                 f"{done.median / cpu:.2f}" if cpu else "—"])
    return done


# targets (issue 7) -------------------------------------------------------------------------------------
def verdict(ok: bool | None, miss: str = "") -> str:
    if ok is None:
        return "not measured"
    return "yes" if ok else f"**no**{': ' + miss if miss else ''}"


def target_rows(discovery, translation, show, mount, redaction, project_count) -> list[list[str]]:
    rows = []
    ours_m, theirs_m = mount.get("ours", {}), mount.get("theirs", {})
    ls_warm = ours_m.get("ls-warm")
    rows.append([f"`ls -l memory/` over {project_count} sessions, warm: under 100 ms",
                 ls_warm.text() if ls_warm else "—",
                 verdict(ls_warm.median < 0.1 if ls_warm and not ls_warm.failure else None,
                         f"{ls_warm.median / 0.1:.1f}x the target" if ls_warm else "")])
    mine, theirs = discovery["search-warm"]
    ok = mine.median < 0.2 and (theirs is None or mine.median <= theirs.median / 2)
    rows.append(["default `search`, warm: under 200 ms and at most half the predecessor's time",
                 f"{mine.text()}; ours/theirs {ratio(mine, theirs)}", verdict(ok)])
    speed = translation["speed"]
    rows.append(["translation: at least 60 MB/s of native input per core (all agents)", f"{speed:.0f} MB/s",
                 verdict(speed >= 60)])
    for key, label in (("content-cold", "`search --content`, first time"), ("content-warm", "`search --content`, after")):
        mine, theirs = discovery[key]
        ok = None if theirs is None or theirs.failure else mine.median <= theirs.median / 2
        rows.append([f"{label}: at least twice as fast as the predecessor's", f"ours/theirs {ratio(mine, theirs)}",
                     verdict(ok, f"{mine.median / theirs.median * 2:.1f}x the target time" if ok is False else "")])
    mine, theirs = ours_m.get("grep-cold"), theirs_m.get("grep-cold")
    ok = None if not (mine and theirs) or mine.failure or theirs.failure else mine.median <= theirs.median / 2
    rows.append(["cold `grep -r` over the mount: at least twice as fast as the predecessor's",
                 f"ours/theirs {ratio(mine, theirs)}" if mine else "—",
                 verdict(ok, f"{mine.median / theirs.median * 2:.1f}x the target time" if ok is False else "")])
    rss = ours_m.get("rss")
    rows.append(["mount server RSS after reading the project: under 300 MB",
                 f"{rss[0]:.0f} MB (peak {rss[1]:.0f} MB)" if rss else "—", verdict(rss[1] < 300 if rss else None)])
    shown = show["`show ID` (JSON) / `show ID --full`, cold"][0]
    peak = max(shown.rss_kb) / 1024 if shown.rss_kb else None
    rows.append(["`show` of the largest session: under 1.5 GB peak RSS", f"{peak:.0f} MB" if peak else "—",
                 verdict(peak < 1536 if peak else None)])
    rows.append(redaction_target(redaction))
    return rows


def redaction_target(redaction: dict) -> list[str]:
    return ["redaction changes no benchmark by more than 10%",
            ", ".join(f"{k} {v * 100:+.0f}%" for k, v in redaction.items()), verdict(max(redaction.values()) <= 0.10)]


def archive_target(archived: dict) -> list[str]:
    """Judged on a corpus of 5,000 sessions or more only (a run's start-up does not scale)."""
    noop, count = archived["noop"], archived["sessions"]
    judged = count >= 5000 and not noop.failure
    return ["`archive` with nothing new: at most 1 s for 5,000 sessions", f"{noop.text()} for {count} sessions",
            verdict(noop.median <= 1 if judged else None)]


# main ---------------------------------------------------------------------------------------------------
class Finished(Exception):
    """The sections of a run are done (`--huge` measures discovery and search only,
    `--skip-extras` stops before start-up)."""


def run_extras(report, me, args, runs) -> None:
    """Start-up, redaction and archive alone (`--only-extras`), with the translation figures
    redaction is judged against, and their targets."""
    targets = report.section("Targets", ["Target", "Measured", "Met?"])
    print("translation", file=sys.stderr)
    translation = bench_translation(report, me, args.tree, runs)
    print("start-up", file=sys.stderr)
    bench_startup(report, me, args.tree, runs)
    print("redaction", file=sys.stderr)
    redaction = bench_redaction(report, me, translation, runs)
    print("archive", file=sys.stderr)
    archived = bench_archive(report, me, translation["largest"], runs)
    targets.append(redaction_target(redaction))
    targets.append(archive_target(archived))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="the 5,000-session corpus (default: the small one)")
    parser.add_argument("--huge", action="store_true",
                        help="a heavy user's 40,000 Claude Code sessions (make_corpus --huge): discovery, search, RSS")
    parser.add_argument("--claude", action="store_true",
                        help="1,000 Claude Code sessions, 500 in the project (make_corpus --claude)")
    parser.add_argument("--skip-extras", action="store_true",
                        help="no start-up, redaction and archive sections (nor their targets): a loaded machine's quicker run")
    parser.add_argument("--runs", type=int, help="runs per figure (default 5; 3 with --full or --huge)")
    parser.add_argument("--tree", default=ROOT, help="the trajectoriz source tree to measure")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs it")
    parser.add_argument("--no-predecessor", action="store_true", help="measure trajectoriz alone")
    parser.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"))
    parser.add_argument("--only-blame", action="store_true",
                        help="measure only `blame` and INDEX.md (no targets; --out another file)")
    parser.add_argument("--only-index", action="store_true",
                        help="measure only INDEX.md of the main project (issue 30's targets; --out another file)")
    parser.add_argument("--only-mount", action="store_true",
                        help="measure only the mount of the main project (issue 36's targets; --out another file)")
    parser.add_argument("--only-extras", action="store_true",
                        help="measure only translation, start-up, redaction and archive (--out another file)")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.full or args.huge or args.claude else 5)
    corpus = corpus_for(args)
    facts = corpus_facts(corpus)
    project, project_count = main_project(facts)
    me = ours(os.path.abspath(args.tree), corpus, args.python)
    them = None if args.no_predecessor else predecessor(corpus)
    report = Report()
    load_before = load()
    scratch = tempfile.mkdtemp(prefix="bench-")
    try:
        if args.only_blame:
            bench_blame(report, me, project, args.tree, runs, scratch)
            raise Finished
        if args.only_index:
            targets = report.section("Targets", ["Target", "Measured", "Met?"])
            targets += index_rows(bench_index(report, me, project, project_count, args.tree, runs, scratch), project_count)
            raise Finished
        if args.only_mount:
            targets = report.section("Targets", ["Target", "Measured", "Met?"])
            targets += issue36_rows(bench_mount(report, me, them, project, args.tree, runs, scratch))
            raise Finished
        if args.only_extras:
            run_extras(report, me, args, runs)
            raise Finished
        targets = report.section("Targets", ["Target", "Measured", "Met?"])
        print("discovery and search", file=sys.stderr)
        discovery = bench_discovery(report, me, them, project, project_count, facts["native_bytes"], runs,
                                    1 if args.huge else None, their_first_content=not args.huge)
        if args.huge:
            print("mount (the server's memory)", file=sys.stderr)
            mount = bench_mount(report, me, None, project, args.tree, 1, scratch)
            targets += huge_rows(discovery, facts["native_bytes"], project_count, mount.get("ours", {}))
            print("INDEX.md", file=sys.stderr)
            targets += index_rows(bench_index(report, me, project, project_count, args.tree, runs, scratch), project_count)
            raise Finished
        print("export", file=sys.stderr)
        export = bench_export(report, me, runs, scratch)
        print("translation", file=sys.stderr)
        translation = bench_translation(report, me, args.tree, runs)
        print("show", file=sys.stderr)
        show = bench_show(report, me, them, translation["largest"], runs)
        print("mount", file=sys.stderr)
        mount = bench_mount(report, me, them, project, args.tree, runs, scratch)
        print("blame and INDEX.md", file=sys.stderr)
        bench_blame(report, me, project, args.tree, runs, scratch)
        targets += issue19_rows(discovery, show, mount, export, project_count)
        targets += issue36_rows(mount)
        if args.skip_extras:
            raise Finished
        print("start-up", file=sys.stderr)
        bench_startup(report, me, args.tree, runs)
        print("redaction", file=sys.stderr)
        redaction = bench_redaction(report, me, translation, runs)
        print("archive", file=sys.stderr)
        archived = bench_archive(report, me, translation["largest"], runs)
        targets += target_rows(discovery, translation, show, mount, redaction, project_count)
        targets.append(archive_target(archived))
    except Finished:
        pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    intro = ["# Benchmark results", "",
             f"`make bench{' BENCH_ARGS=--huge' if args.huge else ' BENCH_ARGS=--claude' if args.claude else ' BENCH_ARGS=--full' if args.full else ''}` (bench/run.py): {facts['sessions']} sessions, "
             f"{facts['native_bytes'] / 1e6:.0f} MB of native data in {len(facts['projects'])} projects "
             f"(bench/make_corpus.py, seed {facts['seed']}); each figure the median of {runs} runs "
             "(min–max). Ratios are ours/theirs: below 1, trajectoriz is faster.", ""]
    intro += [f"- {line}" for line in machine()]
    intro += [f"- load average (1, 5, 15 min) before: {load_before}, after: {load()} "
              "(2 cores shared with other work)"]
    text = report.markdown(intro)
    notes = os.path.join(BENCH, "NOTES.md")
    if os.path.exists(notes):
        with open(notes) as handle:
            text += "\n" + handle.read()
    with open(args.out, "w") as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
