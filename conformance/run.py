"""`make conformance`: install real agent CLIs, run the scenario against the scripted server,
check what trajectoriz reads back, and write the table to conformance/RESULTS.md (pinned) or
conformance/RESULTS-latest.md (latest).

    python -m conformance.run [--agents claude,codex] [--versions pinned|latest] [--keep]

For each agent, one at a time: install the version into conformance/cache/<agent>-<version>/
(npm --prefix, or a venv for PyPI packages; npm's download cache is removed afterwards), start
the server on 127.0.0.1 with a fresh temporary root holding the fake $HOME and two project
directories, run four prompts (a new session, its continuation, a second session, a session in
the other project), stop the server, end any process the agent left behind (its own process
group), and check. Set CONFORMANCE_SABOTAGE=<kind> to run a deliberately broken translator
(conformance/sabotage.py) and see the run fail.
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from conformance import check  # noqa: E402
from conformance.drivers import DRIVERS, Driver  # noqa: E402
from conformance.server import ModelServer, Script  # noqa: E402

HERE = os.path.join(ROOT, "conformance")
CACHE = os.path.join(HERE, "cache")
RESULTS = {"pinned": os.path.join(HERE, "RESULTS.md"), "latest": os.path.join(HERE, "RESULTS-latest.md")}
DEFAULT_AGENTS = ("claude", "codex", "gemini", "opencode", "copilot", "qwen", "pi", "cline", "kilo", "hermes",
                  "kimi", "mswea", "openhands", "continue", "omp", "droid", "gptme")


@dataclass
class Row:
    agent: str
    version: str
    sessions: int | str
    passed: int | str
    failures: list
    notes: list = field(default_factory=list)   # facts about the agent, not failures
    resume: str = "-"    # `trajectoriz resume --prompt` sent the earlier turns to the model (carry_on)
    handoff: str = "-"   # `trajectoriz handoff --to <this agent> --headless` sent the briefing

    def ok(self) -> bool:
        carried = not (self.resume.startswith("no") or self.handoff.startswith("no"))
        return carried and not self.failures and isinstance(self.sessions, int) and 0 < self.sessions == self.passed

    def what_failed(self) -> str:
        return "; ".join(self.failures + [f"({note})" for note in self.notes])


# versions and installs ---------------------------------------------------------------------------------
MAX_TRIES = 3   # VERSIONS=latest: the newest releases tried, newest first, until one installs


@dataclass(frozen=True)
class Candidate:
    version: str
    package: str     # the driver's package, or its platform binary package installed alone

    def label(self, driver: Driver) -> str:
        return self.version if self.package == driver.package_name else f"{self.package}@{self.version}"


def pinned(driver: Driver) -> Candidate:
    return Candidate(driver.pinned, driver.package_name)


def candidates(driver: Driver) -> list[Candidate]:
    """The newest releases, newest first: the package's, and its platform binary package's (a
    wrapper first where both have a version)."""
    found = [Candidate(v, driver.package_name) for v in registry_versions(driver, driver.package_name)]
    if driver.binary:
        binary = fill(driver.binary, {"platform": npm_platform()})
        found += [Candidate(v, binary) for v in npm_versions(binary)]
    found.sort(key=lambda c: (version_key(c.version), c.package == driver.package_name), reverse=True)
    return found[:MAX_TRIES]


def version_key(version: str) -> tuple:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def npm_platform() -> str:
    """The platform suffix of npm binary packages (linux-x64, darwin-arm64, ...)."""
    machine = os.uname().machine
    return f"{sys.platform}-{ {'x86_64': 'x64', 'aarch64': 'arm64'}.get(machine, machine)}"


def registry_versions(driver: Driver, package: str) -> list[str]:
    if driver.registry == "npm":
        return npm_versions(package)
    python = find_python(driver.python)   # pip lists the versions that install on this interpreter
    out = subprocess.run([python, "-m", "pip", "index", "versions", package],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return [v.strip() for v in re.search(r"Available versions: (.*)", out).group(1).split(",")]


def npm_versions(package: str) -> list[str]:
    """Stable releases up to the `latest` tag (a package without one: none)."""
    with tempfile.TemporaryDirectory(prefix="trajectoriz-npm-") as npm_cache:
        out = subprocess.run(["npm", "view", "--cache", npm_cache, "--json", package, "dist-tags", "versions"],
                             capture_output=True, text=True, timeout=120, check=True).stdout
    data = json.loads(out)
    versions = data.get("versions") or []
    versions = [versions] if isinstance(versions, str) else versions
    latest = version_key((data.get("dist-tags") or {}).get("latest") or "")
    return [v for v in versions if "-" not in v and version_key(v) <= latest]


def find_python(minimum: tuple) -> str:
    """A Python interpreter at least `minimum`: python3, python3.N on the PATH, or a pyenv one."""
    candidates = ["python3"] + [f"python3.{minor}" for minor in range(minimum[1], 20)]
    pyenv = os.path.join(os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv"), "versions")
    if os.path.isdir(pyenv):
        candidates += sorted(os.path.join(pyenv, v, "bin", "python3") for v in os.listdir(pyenv))
    for candidate in candidates:
        path = shutil.which(candidate)
        if not path:
            continue
        probe = subprocess.run([path, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                               text=True)
        if probe.returncode == 0 and tuple(map(int, probe.stdout.split())) >= minimum:
            return path
    raise RuntimeError(f"install failed: needs Python >= {'.'.join(map(str, minimum))}, none found")


def install(driver: Driver, candidate: Candidate) -> str:
    """The install folder of `driver` at `candidate`, installed on first use (a folder that did
    not install is removed)."""
    binary = candidate.package != driver.package_name
    target = os.path.join(CACHE, f"{driver.name}-{candidate.version}" + ("-binary" if binary else ""))
    marker = os.path.join(target, ".installed")
    if os.path.exists(marker):
        return target
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    log = os.path.join(target, "install.log")
    try:
        with open(log, "w") as out:
            for command in install_commands(driver, candidate, target):
                subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=True, timeout=1800)
    except subprocess.CalledProcessError:
        reason = install_error(log)
        shutil.rmtree(target, ignore_errors=True)
        raise RuntimeError(f"install failed: {reason}")
    finally:
        shutil.rmtree(os.path.join(target, ".npm-cache"), ignore_errors=True)
    if binary:
        link_binary(driver, candidate, target)
    open(marker, "w").close()
    return target


def install_commands(driver: Driver, candidate: Candidate, target: str) -> list[list[str]]:
    if driver.registry == "npm":
        return [["npm", "install", "--prefix", target, "--cache", os.path.join(target, ".npm-cache"), "--no-audit",
                 "--no-fund", "--no-update-notifier", "--loglevel=error", f"{candidate.package}@{candidate.version}",
                 *driver.runtime]]
    venv = os.path.join(target, "venv")
    return [[find_python(driver.python), "-m", "venv", venv],
            [os.path.join(venv, "bin", "pip"), "install", "--no-cache-dir", "--disable-pip-version-check",
             "-q", f"{candidate.package}=={candidate.version}"]]


def link_binary(driver: Driver, candidate: Candidate, target: str) -> None:
    """A platform binary package declares no `bin`: its bin/<command> goes where npm puts
    commands, so that the driver starts it as it starts the wrapper."""
    command = driver.command[0]
    binary = os.path.join(target, "node_modules", candidate.package, "bin", command)
    if not os.path.isfile(binary):
        raise RuntimeError(f"install failed: {candidate.package} has no bin/{command}")
    os.makedirs(os.path.join(target, "node_modules", ".bin"), exist_ok=True)
    os.symlink(binary, os.path.join(target, "node_modules", ".bin", command))


def install_error(log: str) -> str:
    """The line of an install log that says why (npm and pip bury it among others)."""
    with open(log, errors="replace") as handle:
        lines = [re.sub(r"^(npm error )+", "", line).strip() for line in handle if line.strip()]
    telling = [line for line in lines if re.search(r"notarget No matching|No matching|ENOTFOUND|ERROR:|Error:", line)]
    return ((telling or lines or ["(empty log)"])[0])[:300]


# running one agent ---------------------------------------------------------------------------------------
def fill(template: str, values: dict) -> str:
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def base_env(home: str, install_dir: str) -> dict:
    """A clean environment: none of this machine's variables (keys, agent homes) leak in."""
    bins = [os.path.join(install_dir, "node_modules", ".bin"), os.path.join(install_dir, "venv", "bin")]
    return {"HOME": home, "PATH": os.pathsep.join(bins + [os.environ.get("PATH", "/usr/bin:/bin")]),
            "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": "/bin/bash", "USER": "conformance", "NO_COLOR": "1",
            "TMPDIR": os.path.join(os.path.dirname(home), "tmp")}


def scenario_runs(driver: Driver, root: str) -> list[check.RunSpec]:
    project, other = os.path.join(root, f"proj-{driver.name}"), os.path.join(root, f"proj-{driver.name}-other")
    runs = [check.RunSpec(f"{driver.name}-1", project, "s1")]
    if driver.resume is not None:
        runs.append(check.RunSpec(f"{driver.name}-1b", project, "s1", resume=True))
    runs += [check.RunSpec(f"{driver.name}-2", project, "s2"), check.RunSpec(f"{driver.name}-3", other, "s3")]
    return runs


def run_once(driver: Driver, run: check.RunSpec, env: dict, values: dict, log, finished) -> str:
    """Run one prompt; an empty string when it went well, else what went wrong. `finished()`
    tells whether the server has served the scenario's final answer."""
    values = dict(values, sid=run.sid, prompt=run.prompt, cwd=run.directory,
                  last=newest(values["home"], driver.last_session))
    argv = [fill(a, values) for a in driver.command + (driver.resume if run.resume else driver.new)]
    log.write(f"\n$ ({run.directory}) {' '.join(argv)}\n")
    log.flush()
    if run.resume and driver.typed_resume:
        return run_typed(argv, run, env, log, driver.timeout, finished)
    started = time.monotonic()
    try:
        process = subprocess.Popen(argv, cwd=run.directory, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        return f"{run.sid}: cannot start {argv[0]}: {exc.strerror}"
    try:
        code = process.wait(timeout=driver.timeout)
        problem = f"{run.sid}: exit code {code}" if code else ""
    except subprocess.TimeoutExpired:
        problem = f"{run.sid}: no exit after {driver.timeout}s"
    end_group(process)
    log.write(f"[{run.sid}: {time.monotonic() - started:.1f}s {problem or 'ok'}]\n")
    return problem


def newest(home: str, pattern: str) -> str:
    matches = glob.glob(os.path.join(home, pattern)) if pattern else []
    return os.path.basename(max(matches, key=os.path.getmtime)) if matches else ""


def run_typed(argv: list, run: check.RunSpec, env: dict, log, timeout: int, finished) -> str:
    """An agent that continues a session only in its TUI: start it in a tmux server of our own,
    type the prompt once the screen shows something, wait until the scenario's final answer was
    served (and a moment for the agent to write it down), then end that tmux server."""
    tmux = ["tmux", "-L", f"trajectoriz-conformance-{os.getpid()}-{run.sid}"]
    started = time.monotonic()
    try:
        subprocess.run(tmux + ["new-session", "-d", "-x", "160", "-y", "48", "-c", run.directory, shlex.join(argv)],
                       env=dict(env, TERM="xterm-256color"), check=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{run.sid}: cannot start tmux: {exc}"
    try:
        while not screen(tmux).strip() and time.monotonic() - started < 30:
            time.sleep(0.5)
        time.sleep(3)   # the TUI draws before it reads keys
        subprocess.run(tmux + ["send-keys", "-l", run.prompt], check=True, timeout=30)
        time.sleep(0.5)
        subprocess.run(tmux + ["send-keys", "Enter"], check=True, timeout=30)
        while not finished() and time.monotonic() - started < timeout:
            time.sleep(0.5)
        time.sleep(3)
        log.write(screen(tmux) + "\n")
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True, timeout=30)
    problem = "" if finished() else f"{run.sid}: no final answer within {timeout}s of typing the prompt"
    log.write(f"[{run.sid}: {time.monotonic() - started:.1f}s {problem or 'ok'} (typed into the TUI)]\n")
    return problem


def screen(tmux: list) -> str:
    done = subprocess.run(tmux + ["capture-pane", "-p"], capture_output=True, text=True, timeout=30)
    return done.stdout if done.returncode == 0 else ""


def end_leftovers(home: str) -> None:
    """End what an agent left running outside its process group (Cline starts a detached hub
    daemon): such a process still has the fake $HOME in its environment, so it is ours."""
    marker = b"\0HOME=" + home.encode() + b"\0"
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if entry.isdigit() and marker in b"\0" + handle.read():
                    pids.append(int(entry))
        except OSError:
            continue
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if pids:
            time.sleep(1)


def end_group(process: subprocess.Popen) -> None:
    """End the agent and anything it left running in its process group (it leads the group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_agent(driver: Driver, candidate: Candidate, keep: bool) -> Row:
    try:
        install_dir = install(driver, candidate)
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        return Row(driver.name, candidate.version, "-", "-", [str(exc)])
    return run_installed(driver, candidate.version, install_dir, keep)


def run_latest(driver: Driver, keep: bool) -> Row:
    """The newest release that installs, run; each newer one that did not install is noted."""
    try:
        found = candidates(driver)
    except (subprocess.SubprocessError, AttributeError, OSError, RuntimeError, ValueError) as exc:
        return Row(driver.name, "?", "-", "-", [f"cannot ask the registry for its versions: {exc}"])
    skipped = []
    for candidate in found:
        print(f"conformance: {driver.name} {candidate.label(driver)} ...", file=sys.stderr, flush=True)
        try:
            install_dir = install(driver, candidate)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            skipped.append(f"{candidate.label(driver)} did not install: {exc}")
            continue
        row = run_installed(driver, candidate.version, install_dir, keep)
        if candidate.package != driver.package_name:
            skipped.append(f"run: the platform binary package {candidate.label(driver)}")
        row.notes[:0] = skipped
        return row
    versions = ", ".join(c.label(driver) for c in found)
    return Row(driver.name, f"none of {versions}" if found else "?", "-", "-",
               skipped or ["the registry lists no stable version"])


def run_installed(driver: Driver, version: str, install_dir: str, keep: bool) -> Row:
    root = tempfile.mkdtemp(prefix=f"trajectoriz-conformance-{driver.name}-")
    runs = scenario_runs(driver, root)
    script = Script(driver.parallel, driver.finish_command)
    env, run_problems = play(driver, install_dir, root, runs, script)
    end_leftovers(env["HOME"])
    result = check.check_agent(driver.name, env, runs, script.plan, script.served, trajectoriz_command())
    failures = run_problems + result.failures
    carried = carry_on(driver, install_dir, root, runs)
    with open(os.path.join(root, "plan.json"), "w") as handle:
        json.dump(script.plan, handle, indent=1)
    if keep or failures:
        print(f"  {driver.name}: logs and fake home kept in {root}", file=sys.stderr)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return Row(driver.name, version, result.sessions, result.passed, failures,
               result.notes + ([driver.note] if driver.note else []), **carried)


# carrying a session on ---------------------------------------------------------------------------------
RESUME_MARK, HANDOFF_MARK = "CARRYON-RESUME", "CARRYON-HANDOFF"


def carry_on(driver: Driver, install_dir: str, root: str, runs: list) -> dict:
    """Once the sessions are checked: `trajectoriz resume ID --prompt` on the first session and
    `trajectoriz handoff ID --to <this agent> --headless` of the last, each against a fresh
    scripted server. Resuming works when a request that carries the new prompt also carries the
    session's earlier prompt; a handoff, when a request carries the briefing's block and the
    handed session's prompt. Each result: "yes", "no: why", or "-" (the agent's CLI cannot)."""
    import agents

    cli = getattr(agents.load(driver.name), "CLI", {})
    first, last = runs[0], runs[-1]
    home = os.path.join(root, "home")
    wanted = {"resume": bool(cli.get("resume_prompt")), "handoff": bool(cli.get("start_prompt"))}
    if not any(wanted.values()):
        return {"resume": "-", "handoff": "-"}
    for run in (first, last):  # where users carry on: a git work tree (`codex exec` refuses to run elsewhere)
        if not os.path.isdir(os.path.join(run.directory, ".git")):
            subprocess.run(["git", "init", "-q", run.directory], check=False)
    log_path = os.path.join(root, "carryon.jsonl")
    with open(log_path, "w") as server_log, open(os.path.join(root, "carryon.log"), "w") as log:
        server = ModelServer(Script(driver.parallel, driver.finish_command), log=server_log).start()
        try:
            env = configured(driver, install_dir, home, server.url)
            ids = {run.sid: session_id(env, driver.name, run) for run in (first, last)}
            passed = ("--", *driver.carry_args) if driver.carry_args else ()
            if wanted["resume"]:
                trajectoriz_run(env, log, first.directory, driver.timeout, "resume", ids[first.sid], "--prompt",
                                f"{RESUME_MARK} {driver.name}: what does note.txt hold now?", *passed)
            if wanted["handoff"]:
                trajectoriz_run(env, log, last.directory, driver.timeout, "handoff", ids[last.sid], "--to",
                                driver.name, "--headless", "--task", f"{HANDOFF_MARK} {driver.name}: say what was done.",
                                *passed)
        finally:
            server.stop()
    bodies = [json.dumps(json.loads(line).get("body")) for line in open(log_path) if line.strip()]
    return {"resume": carried(bodies, wanted["resume"], RESUME_MARK, [first.sid]),
            "handoff": carried(bodies, wanted["handoff"], HANDOFF_MARK, ["<<<HISTORY", last.sid])}


def configured(driver: Driver, install_dir: str, home: str, url: str) -> dict:
    """The agent's config files rewritten for the server at `url`, and its environment."""
    values = {"home": home, "venv": os.path.join(install_dir, "venv"), "url": url}
    for relative, content in driver.files.items():
        with open(os.path.join(home, relative), "w") as handle:
            handle.write(fill(content, values))
    env = base_env(home, install_dir)
    env.update({key: fill(value, values) for key, value in driver.env.items()})
    return env


def session_id(env: dict, agent: str, run: check.RunSpec) -> str:
    found = [s for s in check.listing(trajectoriz_command(), env, agent, "--all")
             if f"SCENARIO {run.sid} " in f"{s.get('first_message') or ''} {s.get('title') or ''}"]
    return found[0]["id"] if found else "missing"


def trajectoriz_run(env: dict, log, directory: str, timeout: int, *args: str) -> None:
    argv = trajectoriz_command() + list(args)
    log.write(f"\n$ ({directory}) {shlex.join(argv)}\n")
    log.flush()
    process = subprocess.Popen(argv, cwd=directory, env=env, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        log.write(f"[exit {process.wait(timeout=timeout)}]\n")
    except subprocess.TimeoutExpired:
        log.write(f"[no exit after {timeout}s]\n")
    end_group(process)


def carried(bodies: list, wanted: bool, mark: str, also: list) -> str:
    if not wanted:
        return "-"
    asked = [body for body in bodies if mark in body]
    if not asked:
        return "no: the model was never sent the request"
    missing = [text for text in also if not any(text in body for body in asked)]
    return f"no: the request lacked {', '.join(missing)}" if missing else "yes"


def play(driver: Driver, install_dir: str, root: str, runs: list, script: Script) -> tuple[dict, list[str]]:
    """Start the server, write the agent's config into a fresh $HOME, run every prompt, stop
    the server. The agent's environment and what went wrong in the runs."""
    home = os.path.join(root, "home")
    for path in {run.directory for run in runs} | {home, os.path.join(root, "tmp")}:
        os.makedirs(path, exist_ok=True)
    for run in runs:
        with open(os.path.join(run.directory, "README.md"), "w") as handle:
            handle.write("# conformance project\n")
    with open(os.path.join(root, "server.jsonl"), "w") as server_log, \
            open(os.path.join(root, "agent.log"), "w") as agent_log:
        server = ModelServer(script, log=server_log).start()
        try:
            values = {"home": home, "venv": os.path.join(install_dir, "venv"), "url": server.url}
            for relative, content in driver.files.items():
                path = os.path.join(home, relative)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as handle:
                    handle.write(fill(content, values))
            env = base_env(home, install_dir)
            env.update({key: fill(value, values) for key, value in driver.env.items()})
            problems = [run_once(driver, run, env, values, agent_log, functools.partial(served_final, script, run.sid))
                        for run in runs]
        finally:
            server.stop()
    return env, [p for p in problems if p]


def served_final(script: Script, sid: str) -> bool:
    with script.lock:
        return any(step["kind"] == "final" for step in script.plan.get(sid, {}).get("steps", {}).values())


def trajectoriz_command() -> list[str]:
    sabotage = os.environ.get("CONFORMANCE_SABOTAGE")
    if sabotage:
        return [sys.executable, os.path.join(HERE, "sabotage.py"), sabotage]
    return [sys.executable, os.path.join(ROOT, "trajectoriz.py")]


# the table -----------------------------------------------------------------------------------------------
def table(rows: list[Row]) -> str:
    lines = ["| agent | version | sessions | passed | resume | handoff | what failed |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        failed = row.what_failed().replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {row.agent} | {row.version} | {row.sessions} | {row.passed} | {row.resume} | {row.handoff} "
                     f"| {failed} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default=",".join(DEFAULT_AGENTS),
                        help=f"comma-separated (default: {','.join(DEFAULT_AGENTS)})")
    parser.add_argument("--versions", choices=("pinned", "latest"), default="pinned")
    parser.add_argument("--keep", action="store_true", help="keep every run's temporary root")
    parser.add_argument("--results", help="where to write the table (default: conformance/RESULTS.md, "
                        "for latest versions RESULTS-latest.md)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.agents.split(",") if n.strip()]
    unknown = [n for n in names if n not in DRIVERS]
    if unknown:
        parser.error(f"unknown agent(s) {', '.join(unknown)} (known: {', '.join(DRIVERS)})")
    rows = []
    for name in names:
        driver = DRIVERS[name]
        if args.versions == "pinned":
            print(f"conformance: {name} {driver.pinned} ...", file=sys.stderr, flush=True)
            rows.append(run_agent(driver, pinned(driver), args.keep))
        else:
            rows.append(run_latest(driver, args.keep))
        print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    with open(args.results or RESULTS[args.versions], "w") as handle:
        sabotage = os.environ.get("CONFORMANCE_SABOTAGE")
        broken = f", translators sabotaged: {sabotage}" if sabotage else ""
        handle.write(f"# Conformance run ({args.versions} versions{broken}, {time.strftime('%Y-%m-%d')})\n\n"
                     "Written by `make conformance` (conformance/run.py); see conformance/README.md.\n\n" + text)
    return 0 if all(row.ok() for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
