"""`make man`: write trajectoriz.1 from the real parser (trajectoriz.build_parser) with
argparse-manpage, plus the sections argparse cannot know (build/trajectoriz.1.include).

    python build/manpage.py [--output FILE]      (default: trajectoriz.1)
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from trajectoriz import build_parser  # noqa: E402
from version import VERSION  # noqa: E402

INCLUDE = os.path.join(ROOT, "build", "trajectoriz.1.include")


def manpage() -> str:
    from argparse_manpage.manpage import MANPAGE_DATA_ATTRS, Manpage

    data = dict.fromkeys(MANPAGE_DATA_ATTRS)
    data.update(prog="trajectoriz", version=VERSION, project_name="trajectoriz", format="pretty",
                manual_title="trajectoriz manual", include=INCLUDE,
                description="coding-agent sessions as ATIF documents, and as memory")
    return str(Manpage(build_parser(), format="pretty", _data=data))


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description="Write the trajectoriz man page.")
    options.add_argument("--output", default=os.path.join(ROOT, "trajectoriz.1"), metavar="FILE")
    args = options.parse_args(argv)
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(manpage())
    return 0


if __name__ == "__main__":
    sys.exit(main())
