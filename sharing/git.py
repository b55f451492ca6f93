"""git, driven through the user's own program: the repository around the current directory, its
config and refs, a command's output or its one-line failure, a bounded read of an untrusted
answer. What sharing asks of git passes here (`push`, `pull`); no byte of the shared format is
known here (`refs`)."""

from __future__ import annotations

import os
import threading

from core.errors import UserError
from discovery import pulled


class GitFailed(Exception):
    """A git command that exited non-zero; the message is its last line on stderr."""


class Repository:
    """The git repository around the current directory, driven through the user's own `git`."""

    def __init__(self, root: str, common: str, env):
        self.root = root            # the work tree's top
        self.common = common        # the repository's folder shared by its work trees
        self.env = dict(env)        # what git runs with: the user's (their config, credentials)
        self._config: dict | None = None

    @classmethod
    def here(cls, env) -> "Repository":
        try:
            out = git_output(["rev-parse", "--show-toplevel", "--git-common-dir"], os.getcwd(), env)
        except GitFailed:
            raise UserError("not in a git work tree: push and pull share a project's sessions "
                            "through its own git repository") from None
        root, common = out.decode("utf-8", "surrogateescape").splitlines()[:2]
        return cls(os.path.realpath(root), os.path.realpath(os.path.join(root, common)), env)

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        return git_output(list(args), self.root, self.env, stdin)

    def config(self, name: str) -> str | None:
        """A setting of the repository's git config (its own, the user's, the system's), all of
        them read at once, the first time one is asked for."""
        return self._settings().get(name) or None

    def remotes(self) -> list:
        """The names of the repository's remotes (those with a URL)."""
        return sorted(key[len("remote."):-len(".url")] for key in self._settings()
                      if key.startswith("remote.") and key.endswith(".url"))

    def _settings(self) -> dict:
        if self._config is None:
            try:
                listed = self.git("config", "-z", "--list").decode("utf-8", "replace")
            except GitFailed:
                listed = ""
            self._config = dict(item.partition("\n")[::2] for item in listed.split("\0") if item)
        return self._config

    def set_config(self, name: str, value: str) -> None:
        self.git("config", name, value)
        self._config = None

    def tips(self, under: str) -> dict:
        """ref -> (commit, its tree) of the refs under `under` that are commits."""
        listed = self.git("for-each-ref", "--format=%(refname) %(objecttype) %(objectname) %(tree)", under)
        found = {}
        for line in listed.decode("utf-8", "replace").splitlines():
            fields = line.split(" ")
            if len(fields) == 4 and fields[1] == "commit":
                found[fields[0]] = (fields[2], fields[3])
        return found

    def key(self) -> str:
        """The name of this repository's folder in trajectoriz's cache."""
        return pulled.repository_key(self.common)


def git_output(args: list, where: str, env, stdin: bytes | None = None) -> bytes:
    """`git -C where ARGS`'s output; GitFailed with its last line of stderr when it fails."""
    return git_finished(git_started(args, where, env, stdin is not None), args, stdin)


def git_started(args: list, where: str, env, feeding: bool = False, **outputs):
    """`git -C where ARGS` started (`git_finished` waits for it); its input the user's unless
    `feeding` (a prompt for credentials reads the terminal); `outputs`: its stdout and stderr,
    pipes unless given."""
    import subprocess

    try:
        return subprocess.Popen(["git", "-C", where, *args], stdin=subprocess.PIPE if feeding else None,
                                **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **outputs},
                                env=dict(env))
    except FileNotFoundError:
        raise UserError("git is not installed (or not on PATH): push and pull run the git program") from None


def git_finished(process, args: list, stdin: bytes | None = None) -> bytes:
    out, err = process.communicate(stdin)
    if process.returncode != 0:
        raise GitFailed(_reason(err) or f"git {args[0]} exited with status {process.returncode}")
    return out


def _reason(stderr: bytes) -> str:
    """What a failed git command says, on one line: the remote's own words when it gave some (a
    hook's message), else git's last line."""
    from core.output import printable

    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    said = [line[len("remote:"):].strip() for line in lines if line.startswith("remote:")]
    return printable("; ".join(filter(None, said)) or (lines[-1] if lines else ""))[:400]


def bounded_output(repo: Repository, args: list, limit: int) -> bytes | None:
    """A git command's output, None when it is longer than `limit` (the command is stopped) or
    the command fails or runs longer than pulled.GIT_SECONDS."""
    import subprocess

    process = subprocess.Popen(["git", "-C", repo.root, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=repo.env)
    timer = threading.Timer(pulled.GIT_SECONDS, process.kill)
    timer.start()
    try:
        data = process.stdout.read(limit + 1)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        timer.cancel()
    return None if len(data) > limit or (process.returncode not in (0, -9) and not data) else data


def missing(repo: Repository, oids: list) -> list:
    """Those of the blobs that the repository does not hold (any more)."""
    if not oids:
        return []
    out = repo.git("cat-file", "--batch-check", stdin="".join(o + "\n" for o in oids).encode())
    return [line.split()[0].decode() for line in out.splitlines() if line.endswith(b" missing")]
