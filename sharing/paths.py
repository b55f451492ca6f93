"""What a push shares of a path: paths inside the work tree relative to its top, the pusher's home
directory as `~`, the session's native file by its name alone.

A document names the pusher's files by their absolute paths (tool calls' arguments, their
`extra.paths`, the root `extra.cwd`, commands and outputs that quote them), which hold their home
directory, so their user name; a teammate's clone sits elsewhere, where those paths name nothing.
Before a document is compressed for a push, in its bytes (serialized JSON: the paths as JSON
writes them):

- the work tree's top followed by `/` and a name becomes nothing (`<top>/src/app.py` is
  `src/app.py`), the top alone becomes `.`;
- then the home directory (`$HOME`) becomes `~` (`~/.cargo/bin`), wherever a path starts with it;
- `extra.source` keeps the native file's name only (a Claude Code folder's name spells the home
  directory with dashes).

A path is one where the text around it allows: the character before is not one of a name or a
`/` (`/x/home/alice/...` is left alone), the one after is not one of a name (`/home/alice2` is
another folder). Other paths (`/etc/hosts`, `/tmp/x`) are kept as they are. Each rewriting is
one substitution by a constant of a pattern that starts with the path itself (the characters
around it checked after it, the one before by a lookbehind as long as the path and one more):
the regular expression engine then looks for that literal at memory speed (0.15 s for a 46 MB
document holding 200,000 paths, where cutting it at each occurrence and checking them in Python
took 0.55 s).
"""

from __future__ import annotations

import os
import re

NAME = rb"[\w.\-]"  # a character of a file's name (\w: ASCII letters, digits and _ in bytes)


class Shareable:
    """The rewriting of one push: the work tree `root`, the home directory of `env`."""

    def __init__(self, root: str, env):
        home = env.get("HOME") or ""
        homes = {os.path.realpath(home), os.path.normpath(home)} if home.startswith("/") else set()
        root = root if root.startswith("/") and root != "/" else None
        homes = sorted((h for h in homes if h != "/"), key=len, reverse=True)
        self._json = _substitutions(root, homes, _json)
        self._raw = _substitutions(root, homes, _raw)

    def document(self, data: bytes, source: str | None) -> bytes:
        """A serialized document as it is shared (`source`: the session's, named in its root
        `extra`, which comes last but for sub-agents: looked for from the end)."""
        named = b'"source": "' + (_json(source) or b"\0") + b'"' if source else None
        at = data.rfind(named) if named is not None else -1
        if at >= 0:
            data = b"".join((data[:at], b'"source": "', _json(os.path.basename(source)) or b"", b'"',
                             data[at + len(named):]))
        return _applied(self._json, data)

    def text(self, text: str | None) -> str | None:
        """A line of text shared beside the documents (a title), rewritten as they are."""
        if not text:
            return text
        return _applied(self._raw, text.encode("utf-8", "surrogatepass")).decode("utf-8", "surrogatepass")


def _substitutions(root: str | None, homes: list, written) -> list:
    """(path, pattern, replacement) in the order they apply: the work tree's paths, then the
    home's."""
    found = []
    literal = written(root) if root is not None else None
    if literal:
        found += [(literal, _standing(literal, rb"/(?=" + NAME + rb")"), b""),
                  (literal, _standing(literal, rb"(?!" + NAME + rb")"), b".")]
    for home in filter(None, map(written, homes)):
        found.append((home, _standing(home, rb"(?!" + NAME + rb")"), b"~"))
    return found


def _standing(path: bytes, after: bytes):
    """`path` where it stands as a path: not glued to a name or a `/` before it, `after` after."""
    escaped = re.escape(path)
    return re.compile(escaped + rb"(?<![\w./\-]" + escaped + rb")" + after)


def _applied(substitutions: list, data: bytes) -> bytes:
    """Each substitution made where its path is found at all (a plain search is faster than
    the engine's when there is none)."""
    for path, pattern, replacement in substitutions:
        if path in data:
            data = pattern.sub(replacement, data)
    return data


def _json(text: str) -> bytes | None:
    """A string as JSON writes it between quotes (None for one JSON cannot hold: a path that
    is not UTF-8)."""
    from core.jsonlib import orjson

    try:
        return orjson.dumps(text)[1:-1]
    except (TypeError, orjson.JSONEncodeError):
        return None


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
