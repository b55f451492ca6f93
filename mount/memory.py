"""`trajectoriz memory`: mount a project's sessions as a read-only directory (FUSE, see
mount/memoryfs.py for the file system itself), unmount it, recover one whose server died or hangs,
and report its state.

The serving process always runs libfuse in the foreground and single-threaded
(`--foreground`). The default background mode re-executes trajectoriz with --foreground in a
new session, output to a log file, and returns once the mount answers. libfuse's own
daemonizing is never used: it forks after Python has started, which can leave a lock held
forever, and a PyInstaller onefile parent that sees its child exit deletes the unpacked bundle
the daemon still runs from (PYINSTALLER_RESET_ENVIRONMENT=1 gives the re-executed child a
bundle of its own). The server starts renderer processes when the mount's files are walked
(mount/warmup.py, copies of trajectoriz started with subprocess, never fork), which end with it.

Nothing here waits on the mount without a deadline: every look inside it (`probe`) runs in a
thread that is abandoned after a few seconds, and the mount table is read from the kernel, not
through the mount (where there is none, without /proc, the mount point's stat has a deadline
too: mounts.find).
"""

from __future__ import annotations

import ctypes.util
import os
import re
import shlex
import signal
import subprocess
import sys
import time

from core.hashes import sha256
from core.jsonlib import orjson

from archiving import retention
from core import cache, invocation, mounts, parallel
from core.errors import UserError
from discovery import catalog
from mount import memoryfs

READY_SECONDS = 60
PROBE_SECONDS = 2.0
EXIT_SECONDS = 5.0
LOG_TAIL_BYTES = 64 * 1024
WITHOUT_FUSE = "without FUSE, `trajectoriz export --out DIR` writes the same files"
NOISE = re.compile(r"Ignoring invalid max threads value"  # libfuse 3.14, multi-threaded mounts
                   r"|^fusermount3?: .* not mounted$")  # the auto_unmount helper, after a clean unmount
KNOWN_FAILURES = (  # what libfuse prints (to the log) -> the cause and the fix
    ("device not found", "the kernel offers no FUSE device: load it (modprobe fuse), or start "
                         "the container with --device /dev/fuse --cap-add SYS_ADMIN"),
    ("failed to open /dev/fuse", "no permission to open /dev/fuse: run as root, or give your "
                                 "user access to it"),
    ("mount failed: Operation not permitted", "not permitted to mount (no CAP_SYS_ADMIN, or "
                                              "fusermount3 is not setuid root): in a container, "
                                              "add --cap-add SYS_ADMIN"),
)


def run_memory(args, env) -> int:
    point = mountpoint(args.mountpoint)
    if args.unmount:
        return run_unmount(point, env)
    if args.status:
        return run_status(point, env)
    project = catalog.chosen_project(args)
    invocation.use_host_libc()  # the host's libfuse may need the host's C library (core/invocation.py)
    fuse = load_fuse()
    unmount = shlex.join(["trajectoriz", "memory", "--unmount", *([args.mountpoint] if args.mountpoint else [])])
    if not prepare(point, project, unmount, env):
        print(f"Trajectory memory for {project} is already mounted at {point}.")
        return 0
    if args.foreground:
        return serve(fuse, project, point, env)
    found = catalog.discover(catalog.looking_in(env, project), within=project)  # the index, built
    retention.warn_at_risk(found, env)  # here: the server then finds it warm (see below), once it is written
    cache.settle_writers()
    start_background(project, point, env)
    print(f"Mounting trajectory memory for {project} at\n  {point} (daemonized).\n"
          f"Unmount with: {unmount}")
    if not catalog.Scope(project, env).filter(found.sessions):
        print(f"It holds no session yet (new ones appear as they are recorded). "
              f"{catalog.empty_hint(found, project, env)}")
    return 0


def mountpoint(given: str | None) -> str:
    """MOUNTPOINT as given, else memory/ at the root of the current project (its git work tree,
    or the current directory): the same folder from any of its subdirectories, so that a mount,
    its --status and its --unmount agree wherever they run. --dir does not move it: it chooses
    the sessions, not where they are mounted."""
    if given is not None:
        return os.path.abspath(given)
    return os.path.join(catalog.project_root(os.getcwd()), "memory")


# FUSE itself --------------------------------------------------------------------------------------
def fuse_problem() -> str | None:
    """Why FUSE cannot be used here (the cause and its fix), or None. Binds mfusepy to libfuse 3
    when it is installed (mfusepy would pick libfuse 2 first), else to libfuse 2."""
    if sys.platform.startswith("linux"):
        if not os.path.exists("/dev/fuse"):
            return ("/dev/fuse does not exist (a container started without FUSE?): load the module "
                    "(modprobe fuse), or start the container with --device /dev/fuse --cap-add SYS_ADMIN")
        if not os.access("/dev/fuse", os.R_OK | os.W_OK):
            return "no permission to open /dev/fuse: run as root, or give your user access to it"
        if ctypes.util.find_library("fuse3"):
            os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    try:
        import mfusepy  # noqa: F401  (raises OSError when it finds no libfuse)
    except ImportError:
        return "the Python package mfusepy is missing: pip install -r requirements.txt"
    except (OSError, AttributeError) as exc:
        if invocation.runs_on_own_libc() and invocation.host_glibc() is None:
            return (f"no usable FUSE library ({exc}): this program runs on a glibc of its own, and "
                    "this system's C library is not glibc (musl?), so its libfuse cannot be loaded")
        return (f"no usable FUSE library ({exc}): install it (Debian/Ubuntu: apt install fuse3; "
                "Fedora: dnf install fuse3; Arch: pacman -S fuse3; macOS: brew install --cask macfuse, or FUSE-T)")
    return None


def load_fuse():
    problem = fuse_problem()
    if problem:
        raise UserError(f"cannot mount: {problem}; {WITHOUT_FUSE}")
    import mfusepy

    return mfusepy


def mount_options() -> dict:
    """`ro`: every write fails with EROFS (in the kernel, before the server is asked); no
    `allow_other`: only the mounting user can look inside. No `default_permissions`: with it the
    kernel checks the modes itself, and with its attributes never cached that costs a request for
    the directory's attributes on every path walk, doubling what `ls -l` costs (the modes say
    read-only, which `ro` already enforces; executing a file is still refused, as the kernel
    checks a regular file's execute bits anyway). `attr_timeout=0`: what the kernel keeps of an
    answer unless the answer says otherwise; with libfuse 3 memoryfs gives settled sessions
    longer (memoryfs explains when, and how the kernel is told to forget). `entry_timeout=60`:
    names are remembered for a minute, which spares each `ls -l` a lookup per file; a name that
    goes away is refused once its attributes are asked for again (at once for a session being
    recorded, within a rescan for a settled one, whose attributes the rescan drops), when the
    server answers ENOENT. `auto_unmount`
    (Linux): fusermount3 unmounts when the server dies, so a crash leaves no stale mount
    behind."""
    options = {"ro": True, "fsname": mounts.OURS, "attr_timeout": 0, "entry_timeout": 60,
               "negative_timeout": 0}
    if sys.platform.startswith("linux"):
        options.update(subtype=mounts.OURS, auto_unmount=True)
    elif sys.platform == "darwin":
        options.update(volname="trajectory memory")
    return options


# mounting -----------------------------------------------------------------------------------------
def prepare(point: str, project: str, unmount: str, env) -> bool:
    """Make `point` ready to mount on: heal a dead mount there, create the directory, keep it out
    of git. False when trajectory memory of this project is already mounted there. `unmount`:
    the command that unmounts it, as the user would type it."""
    current = mounts.find(point)
    if current is not None:
        health = probe(point)
        ours = is_ours(current, env, point)
        if health == "ok" and ours and state_of(env, point).get("project") == project:
            return False
        if not (ours and health in ("stale", "hung")):  # only our own dead mounts heal
            state = "" if health == "ok" else f", {health}"
            raise UserError(f"{point} is already a mount point ({current.fstype}{state}): unmount it "
                            f"first ({unmount}) or choose another directory")
        recover(point, env, health)
    if os.path.lexists(point) and not os.path.isdir(point):
        raise UserError(f"{point} exists and is not a directory")
    existed = os.path.lexists(point)
    try:
        cache.make_private_dirs(point)  # 0700, like everything trajectoriz creates
        occupied = bool(os.listdir(point))
    except OSError as exc:
        raise UserError(f"cannot use {point} as a mountpoint: {exc.strerror}") from None
    if occupied:
        raise UserError(f"{point} is not empty: mount onto an empty or new directory (the mount "
                        "would hide its files)")
    if not existed:
        write_private_file(env, _created_name(point), _created_mark(point))
    else:  # the user's own folder, or one a mount made before (its server died): mounted again
        _forget_created(env, point, keep_if_ours=True)
    exclude_from_git(point)
    return True


def _created_name(point: str) -> str:
    return _state_name(point)[: -len(".json")] + ".created"


def _created_mark(point: str) -> bytes:
    """What the note of a mountpoint trajectoriz created holds: its path and inode (a folder
    made again in its place by someone else is not ours)."""
    try:
        return os.fsencode(point) + b"\0" + str(os.stat(point).st_ino).encode()
    except OSError:
        return b""


def _forget_created(env, point: str, keep_if_ours: bool = False) -> bool:
    """Whether trajectoriz created the mountpoint `point` (its note in the private folders);
    the note removed, unless `keep_if_ours` and it names `point` (a folder made by an earlier
    mount, mounted again)."""
    mark, ours = _created_mark(point), False
    for folder in private_folders(env):
        note = os.path.join(folder, _created_name(point))
        try:
            with open(note, "rb") as handle:
                names_it = bool(mark) and handle.read() == mark
            ours = ours or names_it
            if not (keep_if_ours and names_it):
                os.remove(note)
        except OSError:
            continue
    return ours


def remove_created(env, point: str) -> None:
    """Unmounted: remove the mountpoint when trajectoriz created it and it is empty (a user's
    own folder, or one something was put in, stays)."""
    if mounts.find(point) is not None or not _forget_created(env, point):
        return
    try:
        os.rmdir(point)
    except OSError:
        pass


def _fuse_for_memoryfs(fuse):
    """mfusepy's FUSE with two changes. Its `opendir` is given libfuse's fuse_file_info, as
    `open` is (mfusepy's passes the path alone): memoryfs says there how the kernel keeps the
    directory's entries. And readdir's entries, one list per listing in memoryfs, are handed to
    libfuse with their names encoded once per list: mfusepy encodes and type-checks every
    entry of every readdir, which was most of what the server spent on a warm `ls` of 2,000
    files."""

    class FUSE(fuse.FUSE):
        _encoded: tuple = (None, [])  # the entries last listed, and (name as bytes, stat) of each

        def opendir(self, path: bytes, fip) -> int:
            return self.operations.opendir(path.decode(self.encoding, self.errors), fip.contents)

        def readdir_fuse_2(self, path, buf, filler, offset, fip) -> int:
            for name, st in self._entries(path, fip):
                if filler(buf, name, st, 0):
                    break
            return 0

        def readdir_fuse_3(self, path, buf, filler, offset, fip, flags) -> int:
            for name, st in self._entries(path, fip):
                if filler(buf, name, st, 0, 0):
                    break
            return 0

        def _entries(self, path, fip) -> list:
            entries = self.operations.readdir(None if path is None else path.decode(self.encoding, self.errors),
                                              fip.contents.fh)
            if entries is not self._encoded[0]:
                stats = {mode: fuse.c_stat(st_mode=mode) for mode in {mode for _, mode, _ in entries}}
                self._encoded = (entries, [(name.encode(self.encoding, self.errors), stats[mode])
                                           for name, mode, _ in entries])
            return self._encoded[1]

    return FUSE


def serve(fuse, project: str, point: str, env) -> int:
    """Serve the mount in this process until it is unmounted (or SIGINT/SIGTERM/SIGHUP, which
    libfuse turns into an unmount)."""
    mounted, written = [], []

    def ready() -> None:
        mounted.append(True)
        state = orjson.dumps({"pid": os.getpid(), "point": point, "project": project})
        written.append(write_private_file(env, _state_name(point), state))

    fs = memoryfs.MemoryFS(project, env, on_ready=ready, worker_command=invocation.self_command(),
                           workers=parallel.cores(), caller=lambda: fuse.fuse_get_context()[2])
    print(f"Serving trajectory memory for {project} at {point} (Ctrl-C or SIGTERM unmounts).",
          file=sys.stderr, flush=True)
    try:
        _fuse_for_memoryfs(fuse)(fs, point, foreground=True, nothreads=True, raw_fi=True, **mount_options())
    except RuntimeError:
        if not mounted:  # once mounted, libfuse reports an exit by signal as an error too
            raise UserError(f"cannot mount {point}: libfuse refused (its reason is on the line "
                            f"above); {WITHOUT_FUSE}") from None
    finally:
        if written and written[0]:
            _remove(written[0])
    return 0


def start_background(project: str, point: str, env) -> None:
    """Start the server as `--foreground` in a session of its own, and return once the mount
    answers; raise a UserError with the server's reason when it does not. run_memory has just
    discovered the sessions: a cold discovery reads whole SQLite stores (hundreds of MB for a
    big opencode database), and the short-lived launcher, not the server, should carry that
    peak of memory."""
    log = new_log(env, point)
    command = [*invocation.self_command(), "memory", point, "--foreground", "--dir", project]
    with open(log or os.devnull, "ab") as output:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                                 cwd="/", env={**env, "PYINSTALLER_RESET_ENVIRONMENT": "1"},
                                 start_new_session=True)
    readme = os.path.join(point, memoryfs.README)
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise UserError(failure_reason(_tail(log) if log else "", log or "none"))
        if mounts.find(point) is not None and probe(readme) == "ok":
            return
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGKILL)
    if mounts.find(point) is not None:
        recover(point, env, "hung")
    raise UserError(f"the mount at {point} did not answer within {READY_SECONDS} s; its log: {log or 'none'}")


def new_log(env, point: str) -> str | None:
    """A fresh, private log file for the server of `point`, or None (said in one line) when no
    private folder can take one."""
    log = write_private_file(env, _log_name(point), b"")
    if log is None:
        print(f"trajectoriz: no private folder can be written ({', '.join(private_folders(env))}): "
              "the mount runs without a log or a state file (--status cannot name its project)",
              file=sys.stderr)
    elif os.path.dirname(log) != cache.cache_dir(env):
        folder = cache.cache_dir(env)
        why = "cannot be written" if cache.usable(folder) else "is another user's"
        print(f"trajectoriz: the cache folder {folder} {why}: the mount keeps its log and state in "
              f"{os.path.dirname(log)}", file=sys.stderr)
    return log


def failure_reason(log_text: str, log: str) -> str:
    """The one line that says why the server stopped, from its log."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip() and not NOISE.search(line.strip())]
    for needle, cause in KNOWN_FAILURES:
        if any(needle in line for line in lines):
            return f"cannot mount: {cause}; {WITHOUT_FUSE}"
    ours = [line for line in lines if line.startswith("trajectoriz: ")]
    if ours:
        return ours[-1][len("trajectoriz: "):]
    return f"the mount server stopped: {lines[-1] if lines else 'no output'} (log: {log})"


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - LOG_TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


# unmounting, recovering, status ---------------------------------------------------------------------
def run_unmount(point: str, env) -> int:
    current = mounts.find(point)
    if current is None:
        print(f"{point} is not mounted.", file=sys.stderr)
        remove_created(env, point)
        return 0
    health = probe(point)
    if health != "ok":
        recover(point, env, health)
        reason = "had died" if health == "stale" else "was not answering"
        print(f"Unmounted {point} (its server {reason}).")
        remove_created(env, point)
        return 0
    pid = server_pid(env, point)
    gone, complaint = mounts.unmount(point)
    if gone:
        if pid:
            wait_for_exit(pid, EXIT_SECONDS)
        print(f"Unmounted {point}.")
        remove_created(env, point)
        return 0
    gone, _ = mounts.unmount(point, force=True)
    if not gone:
        raise UserError(f"cannot unmount {point}: {complaint}")
    print(f"{point} was in use ({complaint}): detached it; it goes away when the last process "
          "using it leaves.")
    return 0


def recover(point: str, env, health: str) -> None:
    """Free a mount whose server died or does not answer (`health`, from `probe`): stop the
    server (when it is ours), then unmount, lazily if need be, so that no process stays stuck
    on it. Without /proc the server's pid is only its state file's word, trusted while the
    server hangs (it is alive, so the pid is still its own) but not once it died (the pid may
    have been reused)."""
    pid = server_pid(env, point)
    if pid and (health == "hung" or _proc_readable()):  # it does not answer: nothing to wait for
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_for_exit(pid, EXIT_SECONDS)
    if mounts.find(point) is None:
        return
    gone, complaint = mounts.unmount(point)
    if not gone:
        gone, complaint = mounts.unmount(point, force=True)
    if not gone:
        raise UserError(f"cannot unmount {point}: {complaint}")


def run_status(point: str, env) -> int:
    current = mounts.find(point)
    if current is None:
        print(f"{point}: not mounted")
        return 1
    health = probe(point)
    if health != "ok":
        reason = "stale (its server is gone)" if health == "stale" else "not answering"
        print(f"{point}: {reason}; recover with: trajectoriz memory --unmount {point}")
        return 1
    if not is_ours(current, env, point):
        print(f"{point}: mounted ({current.fstype}), not trajectory memory")
        return 1
    state = state_of(env, point)
    log = find_private_file(env, _log_name(point))
    print(f"{point}: mounted, trajectory memory of {state.get('project', '?')}, server pid "
          f"{server_pid(env, point) or '?'}" + (f", log {log}" if log else ""))
    return 0


def probe(path: str, seconds: float = PROBE_SECONDS) -> str:
    """"ok", "stale" (the server is gone), "error" (another failure) or "hung" (no answer within
    `seconds`; the thread asking is left behind, and ends when the mount does)."""
    found = mounts.stat_within(path, seconds)
    if found is None:
        return "hung"
    if isinstance(found, OSError):
        return "stale" if found.errno in mounts.STALE_ERRNOS else "error"
    return "ok"


def is_ours(mount: mounts.Mount, env, point: str) -> bool:
    """Whether the mount at `point` is trajectory memory: its kind says so, or, where no mount
    table tells the kind, a server of ours left its state for `point`."""
    return mount.is_ours or (mount.fstype == mounts.UNKNOWN and bool(state_of(env, point)))


# the server process -------------------------------------------------------------------------------
def _state_name(point: str) -> str:
    return f"mount-{sha256(os.fsencode(point)).hexdigest()[:16]}.json"


def _log_name(point: str) -> str:
    return _state_name(point)[: -len(".json")] + ".log"


def state_of(env, point: str) -> dict:
    """What the server of `point` wrote once mounted: its pid, the mountpoint and the project
    (from the live server's file when an older one was left behind elsewhere)."""
    states = []
    for folder in private_folders(env):
        try:
            with open(os.path.join(folder, _state_name(point)), "rb") as handle:
                found = orjson.loads(handle.read())
        except (OSError, ValueError):
            continue
        if isinstance(found, dict):
            states.append(found)
    live = (s for s in states if isinstance(s.get("pid"), int) and _serves(s["pid"], point))
    return next(live, states[0] if states else {})


def private_folders(env) -> list[str]:
    """Where the mount keeps its log and state: the cache folder, else (when it cannot be
    written, or is another user's) a folder of the user's own in $XDG_RUNTIME_DIR or the
    temporary directory. Those another user owns are left out."""
    folders = [cache.cache_dir(env)]
    if os.path.isabs(env.get("XDG_RUNTIME_DIR") or ""):
        folders.append(os.path.join(env["XDG_RUNTIME_DIR"], "trajectoriz"))
    folders.append(os.path.join(env.get("TMPDIR") or "/tmp", f"trajectoriz-{os.getuid()}"))
    return [folder for folder in folders if cache.usable(folder)]


def write_private_file(env, name: str, data: bytes) -> str | None:
    """Write `name` (owner-only) into the first of the private folders that takes it: its
    path, or None when none does."""
    for folder in private_folders(env):
        try:
            cache.write_private(os.path.join(folder, name), data)
            return os.path.join(folder, name)
        except OSError:
            continue
    return None


def find_private_file(env, name: str) -> str | None:
    """The newest file called `name` in the private folders (the one a live server writes)."""
    found = [os.path.join(f, name) for f in private_folders(env) if os.path.isfile(os.path.join(f, name))]
    return max(found, key=_mtime, default=None)


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def server_pid(env, point: str) -> int | None:
    """The pid of the live process serving `point`: the one its state file names or, that file
    lost, a `memory POINT --foreground` process found in /proc. Checked against its command line
    (Linux), so that a recycled pid is never signalled."""
    pid = state_of(env, point).get("pid")
    if isinstance(pid, int) and _serves(pid, point):
        return pid
    if not _proc_readable():
        return None
    return next((int(p) for p in os.listdir("/proc") if p.isdigit() and _serves(int(p), point)), None)


def _proc_readable() -> bool:
    """Whether /proc tells about processes (macOS has none; a Linux mount namespace may hide
    it, leaving its empty mount point)."""
    return os.path.isdir("/proc/self")


def _serves(pid: int, point: str) -> bool:
    if not _proc_readable():  # trust the state file
        return alive(pid)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            arguments = handle.read().split(b"\0")
    except OSError:
        return False
    wanted = {b"memory", b"--foreground", os.fsencode(point)}
    return wanted <= set(arguments) and alive(pid)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # a zombie has exited
    except (OSError, IndexError):
        return True


def wait_for_exit(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# git ----------------------------------------------------------------------------------------------
def exclude_from_git(point: str) -> None:
    """List a mountpoint that lies inside a git work tree in the repository's info/exclude
    (once; never in a tracked .gitignore), so that `git status` and `rg` leave it alone."""
    found = git_dirs(os.path.dirname(point))
    if found is None:
        return
    top, common = found
    if not os.path.isfile(os.path.join(common, "HEAD")):
        return  # not a repository (a `.git` file may name any folder: a store, say): write nothing
    entry = "/" + re.sub(r"([\\*?\[\]!# ])", r"\\\1", os.path.relpath(point, top)) + "/"
    exclude = os.path.join(common, "info", "exclude")
    try:
        try:
            with open(exclude, encoding="utf-8") as handle:
                existing = handle.read()
        except FileNotFoundError:
            existing = ""
        if entry in existing.splitlines():
            return
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        with os.fdopen(os.open(exclude, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8") as handle:
            handle.write(("" if not existing or existing.endswith("\n") else "\n") + entry + "\n")
    except OSError:
        pass  # a read-only repository: git will show the directory, nothing worse


def git_dirs(start: str) -> tuple[str, str] | None:
    """The work tree around `start` and its repository's common git directory. In a linked
    worktree (or a submodule) `.git` is a file naming the real git directory, whose `commondir`
    names the shared one that holds info/exclude."""
    current = start
    while True:
        dot_git = os.path.join(current, ".git")
        if os.path.isdir(dot_git):
            return current, dot_git
        if os.path.isfile(dot_git):
            git_dir = _git_dir_named_in(dot_git)
            return (current, _common_dir(git_dir)) if git_dir else None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _git_dir_named_in(dot_git: str) -> str | None:
    try:
        with open(dot_git, encoding="utf-8") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), text[len("gitdir:"):].strip()))


def _common_dir(git_dir: str) -> str:
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            return os.path.normpath(os.path.join(git_dir, handle.read().strip()))
    except OSError:
        return git_dir
