"""How long a session's page (`show --html`) takes Chromium to open: the biggest sample sessions
and a generated 2,000-step session, each as rendered (long outputs kept as data until opened)
and with every output in the page up front (what the lazy data spares), the two loaded in turn
so that the machine's drift cancels in their ratio. Writes bench/RESULTS-page.md.

    .venv/bin/python bench/page_load.py PAGE.html...   # pages written by `show ID --html --out`

Each PAGE.html must be the page of a document whose JSON sits beside it as PAGE.json
(`trajectoriz show ID > PAGE.json`): the eager page is rendered from it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..")]

import browser  # noqa: E402
from atif.serialize import loads  # noqa: E402
from rendering import page  # noqa: E402

RUNS = 7


def generated(steps: int = 2000) -> dict:
    made = []
    for n in range(1, steps + 1):
        call = {"tool_call_id": f"c{n}", "function_name": "Bash", "arguments": {"command": f"cat file{n}.txt"},
                "extra": {"kind": "shell", "command": f"cat file{n}.txt"}}
        made.append({"step_id": n, "source": "agent", "message": f"Reading file {n}.", "tool_calls": [call],
                     "observation": {"results": [{"source_call_id": f"c{n}",
                                                  "content": f"line of file {n}\n" * 300}]}})
    return {"schema_version": "ATIF-v1.7", "session_id": "generated", "agent": {"name": "x", "version": "1"},
            "steps": made, "extra": {"short_id": "xx-00000000"}}


def eager(doc: dict) -> bytes:
    saved = page.INLINE_CHARS
    page.INLINE_CHARS = 1 << 40
    try:
        return page.render(doc)
    finally:
        page.INLINE_CHARS = saved


def load_ms(tab, path: str) -> float:
    """From navigation to the load event, as the page's own Navigation Timing says."""
    tab.goto("about:blank")
    tab.goto("file://" + path)
    return tab.js("performance.getEntriesByType('navigation')[0].loadEventEnd")


def main(paths: list[str]) -> None:
    work = tempfile.mkdtemp()
    cases = []
    for path in paths:
        with open(path[: -len(".html")] + ".json", "rb") as handle:
            doc = loads(handle.read())
        cases.append((os.path.basename(path), len(doc["steps"]), path, doc))
    cases.append(("generated, 2,000 steps", 2000, None, generated()))
    chromium = browser.Browser()
    tab = chromium.tab()
    rows = []
    try:
        for name, steps, path, doc in cases:
            started = time.perf_counter()
            lazy_bytes = page.render(doc)
            render_ms = (time.perf_counter() - started) * 1000
            lazy, full = os.path.join(work, "lazy.html"), os.path.join(work, "eager.html")
            open(lazy, "wb").write(lazy_bytes)
            full_bytes = eager(doc)
            open(full, "wb").write(full_bytes)
            pairs = []
            for run in range(RUNS):  # each first in turn
                first, second = (lazy, full) if run % 2 == 0 else (full, lazy)
                times = {first: load_ms(tab, first), second: load_ms(tab, second)}
                pairs.append((times[lazy], times[full]))
            rows.append((name, steps, len(lazy_bytes), render_ms, statistics.median(a for a, _ in pairs),
                         statistics.median(b for _, b in pairs), statistics.median(a / b for a, b in pairs)))
    finally:
        chromium.close()
    load = os.getloadavg()
    lines = ["# A session's page in Chromium", "",
             f"`.venv/bin/python bench/page_load.py` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores shared with other work). "
             f"Chromium {RUNS} times per page, headless, from the file: navigation start to the load event, "
             "median; each page first in every other pair; the page as rendered (outputs over "
             f"{page.INLINE_CHARS:,} characters kept as data until their call is opened) and the same page with "
             "every output in it, loaded in turn; rendering is `page.render` of the parsed document.", "",
             "| Session | Steps | Page | Rendered in | Opens in | Every output inline | Ratio |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {n} | {s:,} | {b / 1e6:.2f} MB | {r:.0f} ms | {a:.0f} ms | {e:.0f} ms | {x:.2f} |"
              for n, s, b, r, a, e, x in rows]
    result = "\n".join(lines) + "\n"
    with open(os.path.join(HERE, "RESULTS-page.md"), "w") as handle:
        handle.write(result)
    print(result)


if __name__ == "__main__":
    main(sys.argv[1:])
