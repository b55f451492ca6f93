import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Redaction keys its markers with a key it keeps in the data folder (redaction/markerkey.py): code that
# runs in this process with its own environment must not make one in the real home of whoever
# runs the tests. (Commands get the environment each test gives them.)
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="trajectoriz-tests-data-")
atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], True)

# File names carry the local date: make every test see the same one.
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(scope="session", autouse=True)
def a_fuse_mount_elsewhere():
    """A FUSE mount of the suite's own, away from every test's home, while the tests run (where
    FUSE can be used): users' machines often have one (their own `trajectoriz memory` in
    another project), and discovery records the mount table (the index and a snapshot once
    kept other bytes then). Its point, or None without FUSE."""
    from core import mounts
    from mount import memory

    if memory.fuse_problem() or not (shutil.which("fusermount3") or shutil.which("fusermount")):
        yield None
        return
    point = tempfile.mkdtemp(prefix="trajectoriz-tests-fuse-")
    # Started through a shell that leaves it behind: a child of the test process would be seen
    # by the tests that check that the code under test leaves no child (os.waitpid(-1, ...)).
    started = subprocess.run(["sh", "-c", '"$0" "$1" "$2" </dev/null >/dev/null 2>&1 & echo $!', sys.executable,
                              os.path.join(ROOT, "tests", "tinyfuse.py"), point], capture_output=True, text=True)
    server = int(started.stdout)
    deadline = time.monotonic() + 20
    while mounts.find(point) is None and _alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield point if mounts.find(point) is not None else None
    finally:
        for tool in ("fusermount3", "fusermount"):
            if mounts.find(point) is not None and shutil.which(tool):
                subprocess.run([tool, "-u", point], capture_output=True, timeout=30)
        if _alive(server):
            os.kill(server, signal.SIGKILL)
        if mounts.find(point) is None:
            os.rmdir(point)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def pytest_terminal_summary(terminalreporter):
    """Say, above the counts, what did not run and why: the tests of the built executable until
    `make build` has written dist/trajectoriz (tests/test_binary.py), and the tests whose
    programs are not installed (helpers.needs). `-q` shows no skip reasons, so they would be a
    silent part of "N skipped"."""
    from helpers import NOT_INSTALLED

    skipped = [(os.path.basename(report.location[0]), report.longrepr[2].removeprefix("Skipped: "))
               for report in terminalreporter.stats.get("skipped", [])]
    binary = [reason for name, reason in skipped if name == "test_binary.py" and "`make build`" in reason]
    if binary:
        terminalreporter.write_line(f"{len(binary)} tests of the built executable were skipped: {binary[0]}",
                                    yellow=True)
    for reason, count in Counter(reason for _, reason in skipped if NOT_INSTALLED in reason).items():
        terminalreporter.write_line(f"{count} test(s) skipped: {reason}", yellow=True)
