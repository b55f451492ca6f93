"""README.md's Install block, pasted as it is into a fresh shell: `env -i` (nothing of this
environment), a HOME of its own with no ~/.local/bin yet (so not on PATH, as on a machine that
has not logged in again since), bash reading the lines as typed. The program is a stand-in made
here (a script answering `--man` and `--version` as the release does), released into a download
folder with its .sha256 as `make release` writes them (build/pack.py): the block's own shell
work is what is checked; tests/test_binary.py runs the same block on the built file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "build"))
import pack  # noqa: E402

STAND_IN = """#!/bin/sh
case $1 in
    --man) printf '.TH TRAJECTORIZ "1" "stand-in"\\n.SH NAME\\ntrajectoriz\\n' ;;
    --version) echo "trajectoriz {version}" ;;
    *) exit 2 ;;
esac
"""


def install_block() -> list[str]:
    """The first indented block of README.md's Install section, line by line."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text[text.index("\n## Install\n"):].split("\n## ", 2)[1]
    block = re.search(r"\n\n((?:    .*\n)+)", section).group(1)
    return [line[4:] for line in block.splitlines() if line.strip()]


def test_the_install_block_works_pasted_into_a_fresh_shell(tmp_path):
    single = tmp_path / "trajectoriz"
    single.write_text(STAND_IN.format(version=pack.VERSION))
    single.chmod(0o755)
    downloads, home = tmp_path / "Downloads", tmp_path / "home"
    downloads.mkdir()
    home.mkdir()
    pack.release(str(single), into=str(downloads))
    name = pack.release_name()
    pasted = "\n".join(install_block()) + "\n"
    done = subprocess.run(["env", "-i", f"HOME={home}", "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                           "bash", "--noprofile", "--norc", "-s"], input=pasted.encode(), cwd=downloads,
                          capture_output=True, timeout=60)
    assert (done.returncode, done.stderr.decode()) == (0, "")
    assert done.stdout.decode() == f"{name}: OK\ntrajectoriz {pack.VERSION}\n"
    installed = home / ".local" / "bin" / "trajectoriz"
    assert installed.read_text() == single.read_text() and os.access(installed, os.X_OK)
    page = home / ".local" / "share" / "man" / "man1" / "trajectoriz.1"
    assert page.read_text().startswith(".TH TRAJECTORIZ")
    assert sorted(os.listdir(downloads)) == [f"{name}.sha256"]
