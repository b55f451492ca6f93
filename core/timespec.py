"""Times given on the command line (`--since`, `--until`, `--before`)."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

from core.errors import UserError


def when(text: str | None, option: str, end: bool = False) -> float | None:
    """Epoch seconds from `YYYY-MM-DD` (local day; with `end`, the end of that day), an ISO
    time, or `Nd` (N days ago)."""
    if text is None:
        return None
    value = text.strip()
    days = re.fullmatch(r"(\d+)d", value)
    if days:
        return time.time() - int(days[1]) * 86400
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(f"{option} {text!r}: expected YYYY-MM-DD, an ISO time "
                        f"(2026-06-10T14:00) or Nd (N days ago)") from None
    if end and len(value) == 10:
        moment += timedelta(days=1) - timedelta(microseconds=1)
    return moment.timestamp()
