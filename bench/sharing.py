#!/usr/bin/env python3
"""`trajectoriz push` and `pull` on the bench corpus' biggest project, next to plain git moving
the same objects.

    python bench/sharing.py [--corpus DIR] [--runs N] [--scratch DIR]

The corpus (bench/make_corpus.py, 5,000 sessions by default: about 2,000 of them in one project)
is built when missing. That project becomes a git work tree with a bare repository beside it as
its remote; a second HOME, with a clone of it at another path, is the teammate who pulls.
Measured, each the median of --runs runs (cold first push: once):
- the first push, documents not rendered yet (cold), rendered before (a user who listed or
  mounted them) and rendered and compressed before (an earlier push, of another project or to
  another remote, kept the compressed blobs), against `git push` of the same objects to an
  empty remote; every first push starts from a project repository that holds none of the
  ref's objects (`forget_pushes`: the refs deleted, then `git gc --prune=now`), as a first
  push does;
- a push with nothing new;
- the first pull into a fresh clone, against `git fetch` of the same refs into a fresh clone;
- a pull with nothing new;
- the bytes pushed (the remote's pack) against the project's native session bytes.
The results replace the section "Sharing" of bench/RESULTS.md (--results another file).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import run as bench  # noqa: E402  (bench/run.py: timing, the corpus, the machine)

sys.path.insert(0, ROOT)
from rendering import doccache  # noqa: E402  (the documents' folder in the cache)

SECTION = "## Sharing"


def git(cwd: str, *args: str, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def fresh_bare(path: str) -> str:
    shutil.rmtree(path, ignore_errors=True)
    git(os.path.dirname(path), "init", "-q", "--bare", path)
    return path


class Setup:
    """The project as a git work tree with its remote, and the teammate's HOME and clone."""

    def __init__(self, corpus: str, scratch: str, python: str):
        facts = bench.corpus_facts(corpus)
        self.project, self.count = bench.main_project(facts)
        self.native = sum(c["bytes"] for c in facts["copies"] if c["cwd"] == self.project)
        self.scratch = scratch
        os.makedirs(scratch, exist_ok=True)
        self.remote = fresh_bare(os.path.join(scratch, "remote.git"))
        self.argv = [python, os.path.join(ROOT, "trajectoriz.py")]
        self.alice = bench.clean_env(os.path.join(corpus, "home"), XDG_CACHE_HOME=os.path.join(scratch, "cache-a"),
                                     PWD=self.project, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Alice",
                                     GIT_AUTHOR_EMAIL="alice@example.org", GIT_COMMITTER_NAME="Alice",
                                     GIT_COMMITTER_EMAIL="alice@example.org")
        os.makedirs(self.project, exist_ok=True)
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=self.project, capture_output=True)
        if top.returncode or os.path.realpath(top.stdout.decode().strip()) != os.path.realpath(self.project):
            # not a repository of its own yet: the corpus' empty marker, or a repository around
            # it (the corpus sits in trajectoriz's work tree), which must never be configured here
            shutil.rmtree(os.path.join(self.project, ".git"), ignore_errors=True)  # the corpus' empty marker
            git(self.project, "init", "-q", env=self.alice)
            with open(os.path.join(self.project, "README"), "w") as handle:
                handle.write("the bench's project\n")
            git(self.project, "add", "README", env=self.alice)
            git(self.project, "commit", "-qm", "first", env=self.alice)
        assert os.path.realpath(git(self.project, "rev-parse", "--show-toplevel").strip()) == os.path.realpath(self.project)
        git(self.project, "config", "user.email", "alice@example.org")
        git(self.project, "config", "trajectoriz.contributor", "alice")
        subprocess.run(["git", "remote", "remove", "origin"], cwd=self.project, capture_output=True)
        git(self.project, "remote", "add", "origin", self.remote)
        git(self.project, "push", "-q", "origin", "HEAD:refs/heads/main", env=self.alice)
        bob_home = os.path.join(scratch, "bob")
        os.makedirs(bob_home, exist_ok=True)
        self.clone = os.path.join(scratch, "bob-work", "proj")
        self.bob = bench.clean_env(bob_home, XDG_CACHE_HOME=os.path.join(scratch, "cache-b"), PWD=self.clone,
                                   GIT_CONFIG_NOSYSTEM="1")

    def ours(self, *args: str) -> list[str]:
        return self.argv + list(args)

    def forget_pushes(self) -> None:
        """As before any push: an empty remote, no ref here and none of its objects (`git gc
        --prune=now` drops them: else a first push would find its blobs already stored by the
        run before), no push state (documents kept, and the compressed blobs an earlier push
        kept beside them)."""
        fresh_bare(self.remote)
        git(self.project, "push", "-q", "origin", "HEAD:refs/heads/main", env=self.alice)
        for ref in git(self.project, "for-each-ref", "--format=%(refname)", "refs/trajectoriz/").split():
            git(self.project, "update-ref", "-d", ref)
        git(self.project, "gc", "-q", "--prune=now", env=self.alice)
        left = git(self.project, "count-objects", "-v")
        assert sum(int(n) for n in re.findall(r"^(?:count|in-pack): (\d+)", left, re.M)) < 10, left
        state = os.path.join(self.alice["XDG_CACHE_HOME"], "trajectoriz", "push-v2.bin")
        if os.path.exists(state):
            os.remove(state)

    def forget_compressed(self) -> None:
        """`forget_pushes`, and the compressed blobs kept beside the documents: a first push by
        someone who has only listed or mounted the sessions."""
        self.forget_pushes()
        documents = os.path.join(self.alice["XDG_CACHE_HOME"], "trajectoriz", doccache.FOLDER)
        for name in os.listdir(documents):
            if name.endswith(".zst"):
                os.remove(os.path.join(documents, name))

    def fresh_clone(self) -> None:
        shutil.rmtree(os.path.dirname(self.clone), ignore_errors=True)
        shutil.rmtree(self.bob["XDG_CACHE_HOME"], ignore_errors=True)
        os.makedirs(os.path.dirname(self.clone))
        git(os.path.dirname(self.clone), "clone", "-q", "--no-local", self.remote, self.clone, env=self.bob)


def pack_bytes(repository: str) -> int:
    found = git(repository, "count-objects", "-v")
    return 1024 * sum(int(n) for n in re.findall(r"^(?:size|size-pack): (\d+)", found, re.M))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=os.path.join(BENCH, "corpus", "full"))
    parser.add_argument("--scratch", default=os.path.join(BENCH, "corpus", "sharing"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--results", default=os.path.join(BENCH, "RESULTS.md"),
                        help="the file whose Sharing section the results replace")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.corpus, "corpus.json")):
        subprocess.run([sys.executable, os.path.join(BENCH, "make_corpus.py"), "--out", args.corpus], check=True)
    bench.settle(args.corpus)
    load_before = bench.load()
    s = Setup(args.corpus, args.scratch, args.python)
    runs = args.runs
    shutil.rmtree(s.alice["XDG_CACHE_HOME"], ignore_errors=True)

    cold = bench.measure(s.ours("push", "--remote", "origin"), s.alice, 1, cwd=s.project)
    pushed = pack_bytes(s.remote)
    ref = "refs/trajectoriz/alice"
    blobs = git(s.project, "ls-tree", "-r", "-l", ref).splitlines()
    compressed = sum(int(line.split()[3]) for line in blobs)
    sessions = sum(1 for line in blobs if line.endswith(".atif.json.zst"))
    spare = os.path.join(s.scratch, "plain.git")
    plain = bench.measure(["git", "push", "-q", spare, f"{ref}:{ref}"], s.alice, runs,
                          before=lambda: fresh_bare(spare), cwd=s.project)
    first = bench.measure(s.ours("push"), s.alice, runs, before=s.forget_pushes, cwd=s.project)
    uncompressed = bench.measure(s.ours("push"), s.alice, runs, before=s.forget_compressed, cwd=s.project)
    again = bench.measure(s.ours("push"), s.alice, runs, cwd=s.project)
    pulled = bench.measure(s.ours("pull", "--remote", "origin"), s.bob, runs, before=s.fresh_clone, cwd=s.clone)
    fetched = bench.measure(["git", "fetch", "-q", "--no-tags", "origin", "+refs/trajectoriz/*:refs/trajectoriz/remote/*"],
                            s.bob, runs, before=s.fresh_clone, cwd=s.clone)
    s.fresh_clone()
    bench.run_once(s.ours("pull", "--remote", "origin"), s.bob, s.clone)
    pull_again = bench.measure(s.ours("pull"), s.bob, runs, cwd=s.clone)
    listed = bench.measure(s.ours("list"), s.bob, runs, cwd=s.clone)

    def ratio(ours, theirs) -> float:
        return ours.median / theirs.median if ours.seconds and theirs.seconds else float("nan")
    share = pushed / s.native if s.native else float("nan")
    rows = [
        ["first push, documents rendered and compressed before / `git push` of the same objects, at most 2.0",
         f"{ratio(first, plain):.2f} ({first.text()} vs {plain.text()})", ratio(first, plain) <= 2],
        ["first push, documents rendered before, never compressed / `git push` of the same objects, at most 2.0",
         f"{ratio(uncompressed, plain):.2f} ({uncompressed.text()} vs {plain.text()})", ratio(uncompressed, plain) <= 2],
        ["first pull into a fresh clone / `git fetch` of the same refs, at most 2.0",
         f"{ratio(pulled, fetched):.2f} ({pulled.text()} vs {fetched.text()})", ratio(pulled, fetched) <= 2],
        ["push with nothing new, at most 1 s", again.text(), again.median <= 1],
        ["pull with nothing new, at most 1 s", pull_again.text(), pull_again.median <= 1],
        ["pushed bytes / native bytes of the sessions, at most 25 %",
         f"{share:.1%} ({pushed / 1e6:.1f} MB pushed, {s.native / 1e6:.0f} MB native)", share <= 0.25],
    ]
    lines = [SECTION, "",
             f"`python bench/sharing.py` ({s.count} sessions of the corpus' biggest project, "
             f"{s.native / 1e6:.0f} MB native; {sessions} pushed as {compressed / 1e6:.1f} MB of zstd documents); "
             f"each figure the median of {runs} runs (min–max). Load before: {load_before}, after: {bench.load()}.",
             "", "| Target | Measured | Met? |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {'yes' if met else '**no**'} |" for name, value, met in rows]
    lines += ["", "| Operation | Time | Peak RSS |", "|---|---|---|",
              f"| first push, cold ({sessions} documents rendered and compressed, on every core) | {cold.text()} | {cold.rss()} |",
              f"| first push, documents rendered and compressed before (an earlier push kept them) | {first.text()} | {first.rss()} |",
              f"| first push, documents rendered before, never compressed | {uncompressed.text()} | {uncompressed.rss()} |",
              f"| `git push` of the same objects to an empty remote | {plain.text()} | {plain.rss()} |",
              f"| push with nothing new | {again.text()} | {again.rss()} |",
              f"| first pull into a fresh clone | {pulled.text()} | {pulled.rss()} |",
              f"| `git fetch` of the same refs into a fresh clone | {fetched.text()} | {fetched.rss()} |",
              f"| pull with nothing new | {pull_again.text()} | {pull_again.rss()} |",
              f"| `list` in the clone, the pulled sessions listed | {listed.text()} | {listed.rss()} |", ""]
    record(args.results, "\n".join(lines))
    print("\n".join(lines))
    return 0


def record(path: str, section: str) -> None:
    """Replace the Sharing section of the results (or add it at the end)."""
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    start = text.find("\n" + SECTION + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start + 1] + section + (text[end + 1:] if end >= 0 else "")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    sys.exit(main())
