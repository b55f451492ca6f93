"""The build backend of `pip install .` and `pipx install .` (pyproject.toml): setuptools', with
two steps of its own before it builds.

- setuptools' work folders go to pyi-work/ (its default, build/, holds these scripts), which a
  fresh clone lacks and setuptools will not create for its egg-info: made here.
- The wheel carries the manual page (`trajectoriz --man`, commands/manual.py), written from the
  parser by build/manpage.py into trajectoriz.1 at the root, as `make man` writes it; without
  argparse-manpage (a build requirement) the wheel has none and `--man` says so in one line.
"""

from __future__ import annotations

import os
import sys

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F401,F403  (every hook this module does not wrap)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.makedirs(os.path.join(ROOT, "pyi-work"), exist_ok=True)


def _write_manpage() -> None:
    sys.path.insert(0, os.path.join(ROOT, "build"))
    try:
        import manpage
    except ImportError:
        return
    finally:
        sys.path.remove(os.path.join(ROOT, "build"))
    try:
        page = manpage.manpage()
    except ImportError:  # argparse_manpage itself, imported when the page is made
        return
    with open(os.path.join(ROOT, "trajectoriz.1"), "w", encoding="utf-8") as handle:
        handle.write(page)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _write_manpage()
    return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)
