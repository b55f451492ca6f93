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

from core.version import VERSION  # noqa: E402
from trajectoriz import build_parser  # noqa: E402

INCLUDE = os.path.join(ROOT, "build", "trajectoriz.1.include")


def manpage() -> str:
    from argparse_manpage.manpage import MANPAGE_DATA_ATTRS, Manpage

    parser = build_parser()
    data = dict.fromkeys(MANPAGE_DATA_ATTRS)
    data.update(prog="trajectoriz", version=VERSION, project_name="trajectoriz", format="pretty",
                manual_title="trajectoriz manual", include=INCLUDE, date=page_date(),
                description="coding-agent sessions as ATIF documents, and as memory")
    return with_examples(str(Manpage(parser, format="pretty", _data=data)), parser)


def page_date() -> str:
    """The page's date: SOURCE_DATE_EPOCH's, else the last commit's, so that the same sources
    make the same page (and the same binary, which carries it)."""
    import datetime
    import subprocess

    if os.environ.get("SOURCE_DATE_EPOCH"):
        moment = datetime.datetime.fromtimestamp(int(os.environ["SOURCE_DATE_EPOCH"]), datetime.timezone.utc)
        return moment.strftime("%Y-%m-%d")
    try:
        return subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%cs"], capture_output=True,
                              text=True, check=True).stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def roff_lines(text: str) -> list[str]:
    """Plain lines as roff shows them verbatim (inside .nf/.fi)."""
    lines = []
    for line in text.splitlines():
        line = line.replace("\\", "\\e").replace("-", "\\-")
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return lines


def with_examples(page: str, parser) -> str:
    """argparse-manpage leaves out each command's epilog (its examples and notes): each goes
    after that command's options, in a section of its own."""
    lines = page.split("\n")
    for name, sub in parser.subcommands.items():
        if not sub.epilog:
            continue
        heading = f".SH OPTIONS \\fI\\,'trajectoriz {name}'\\/\\fR"
        start = lines.index(heading)
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(".SH "))
        lines[end:end] = [f".SH EXAMPLES AND NOTES \\fI\\,'trajectoriz {name}'\\/\\fR", ".nf",
                          *roff_lines(sub.epilog), ".fi", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description="Write the trajectoriz man page.")
    options.add_argument("--output", default=os.path.join(ROOT, "trajectoriz.1"), metavar="FILE")
    args = options.parse_args(argv)
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(manpage())
    return 0


if __name__ == "__main__":
    sys.exit(main())
