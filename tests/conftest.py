import atexit
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

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
