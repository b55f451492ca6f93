"""`trajectoriz --man`: the manual page, from the program itself.

The single-file executable carries the page build/manpage.py wrote when it was built
(build/trajectoriz.spec puts it beside the bundled modules); from the source tree it is made
from the parser on the spot (argparse-manpage, a build dependency), else read from the
trajectoriz.1 that `make man` wrote; a pip or pipx install reads the trajectoriz.1 its wheel
carries (build/pip_backend.py wrote it). Printed as roff, the text `man` reads
(`trajectoriz --man > ~/.local/share/man/man1/trajectoriz.1` installs it); on a terminal it
is shown through `man -l -` where man exists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from core.errors import UserError

NAME = "trajectoriz.1"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the program's root


def page() -> str:
    if getattr(sys, "frozen", False):
        with open(os.path.join(sys._MEIPASS, NAME), encoding="utf-8") as handle:
            return handle.read()
    build = os.path.join(HERE, "build")
    if os.path.exists(os.path.join(build, "manpage.py")):  # a clone (a pip install has no build/)
        sys.path.insert(0, build)
        try:
            import manpage

            return manpage.manpage()
        except ImportError:
            pass
        finally:
            sys.path.remove(build)
    try:
        with open(os.path.join(HERE, NAME), encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        raise UserError("no manual page here: in a clone, install argparse-manpage (pip install -r "
                        "requirements.txt) or run `make man`; a pip install has it when argparse-manpage "
                        "was there as it was built") from None


def run() -> int:
    text = page()
    if sys.stdout.isatty() and shutil.which("man"):
        shown = subprocess.run(["man", "-l", "-"], input=text.encode())
        if shown.returncode == 0:
            return 0
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0
