"""trajectoriz memory where /proc is not mounted (a container or a mount namespace without it):
no mount table and no process list. Run for real: a private mount namespace (`unshare -m`)
whose /proc is unmounted, in which the whole life of a mount is played by a shell script, each
command under `timeout -s KILL`. Its server is killed from outside at the end if need be
(that ends the namespace and its mount with it).
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT, cli
from test_memory import FUSE_PROBLEM, listed, make_store, servers_of, take_down

SCRIPT = r"""
python=$1 trajectoriz=$2 point=$3 project=$4 file=$5 copy=$6
umount -l /proc && test ! -e /proc/self || { echo "== proc"; exit 0; }
step() {
    name=$1; shift
    echo "== $name"; timeout -s KILL 90 "$python" "$trajectoriz" memory "$@" 2>&1; echo "== rc=$?"
}
step mount "$point" --dir "$project"
step status --status "$point"
timeout -s KILL 20 cat "$point/$file" > "$copy"
step again "$point" --dir "$project"
step unmount --unmount "$point"
step remount "$point" --dir "$project"
kill -STOP "$(timeout -s KILL 20 "$python" "$trajectoriz" memory --status "$point" | sed -n 's/.*server pid \([0-9]*\).*/\1/p')"
step unhang --unmount "$point"
step after --status "$point"
"""

pytestmark = [
    pytest.mark.skipif(FUSE_PROBLEM is not None, reason=f"FUSE unavailable: {FUSE_PROBLEM}"),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="hiding /proc needs root and unshare"),
]


def steps(output: str) -> dict:
    """step name -> (what it printed, its exit status), from the script's output."""
    return {name: (text, int(rc)) for name, text, rc in re.findall(r"== (\w+)\n(.*?)== rc=(\d+)\n", output, re.S)}


def test_without_proc_the_mount_is_found_reported_and_unmounted(tmp_path):
    env, proj, _ = make_store(tmp_path)
    point = os.path.join(proj, "memory")
    name = next(iter(listed(env, proj)))
    copy = str(tmp_path / "copy")
    try:
        played = subprocess.run(["timeout", "-s", "KILL", "400", "unshare", "-m", "--propagation", "private",
                                 "sh", "-c", SCRIPT, "sh", sys.executable, os.path.join(ROOT, "trajectoriz.py"),
                                 point, proj, name, copy], env=env, capture_output=True, text=True)
        if "== proc" in played.stdout:
            pytest.skip("/proc cannot be unmounted in a mount namespace here")
        done = steps(played.stdout)
        assert done["mount"][1] == 0 and "(daemonized)" in done["mount"][0], done["mount"]
        assert done["status"][1] == 0 and re.search(rf"trajectory memory of {re.escape(proj)}, server pid \d+",
                                                    done["status"][0]), done["status"]
        with open(copy, "rb") as handle:
            assert handle.read() == cli("show", name, env=env).stdout
        assert done["again"] == (f"Trajectory memory for {proj} is already mounted at {point}.\n", 0)
        assert done["unmount"] == (f"Unmounted {point}.\n", 0)
        assert done["remount"][1] == 0, done["remount"]
        assert done["unhang"] == (f"Unmounted {point} (its server was not answering).\n", 0)
        assert done["after"] == (f"{point}: not mounted\n", 1)
        assert servers_of(point) == []  # the stopped server was killed
    finally:
        take_down(point)
