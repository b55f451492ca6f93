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
another folder). Other paths (`/etc/hosts`, `/tmp/x`) are kept as they are. The text is cut
at each occurrence of the literal (`bytes.split`, at memory speed), never searched with a
regular expression (ten times slower over a 50 MB document).
"""

from __future__ import annotations

import os

NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
SLASH = ord("/")


class Shareable:
    """The rewriting of one push: the work tree `root`, the home directory of `env`."""

    def __init__(self, root: str, env):
        home = env.get("HOME") or ""
        homes = {os.path.realpath(home), os.path.normpath(home)} if home.startswith("/") else set()
        self.root = root if root.startswith("/") and root != "/" else None
        self.homes = sorted((h for h in homes if h != "/"), key=len, reverse=True)

    def document(self, data: bytes, source: str | None) -> bytes:
        """A serialized document as it is shared (`source`: the session's, named in its `extra`)."""
        named = _json(source) if source else None
        if named is not None and b'"source": "' + named + b'"' in data:
            data = data.replace(b'"source": "' + named + b'"',
                                b'"source": "' + (_json(os.path.basename(source)) or b"") + b'"', 1)
        return self._paths(data, _json)

    def text(self, text: str | None) -> str | None:
        """A line of text shared beside the documents (a title), rewritten as they are."""
        if not text:
            return text
        return self._paths(text.encode("utf-8", "surrogatepass"), _raw).decode("utf-8", "surrogatepass")

    def _paths(self, data: bytes, written) -> bytes:
        root = written(self.root) if self.root is not None else None
        if root:
            data = _replaced(data, root, b"", b".")
        for home in map(written, self.homes):
            if home:
                data = _replaced(data, home, b"~", b"~")
        return data


def _replaced(data: bytes, path: bytes, inside: bytes, alone: bytes) -> bytes:
    """`data` with each occurrence of `path` that stands as a path rewritten: followed by `/`
    and a name, `path` and that `/` give way to `inside` (`~`: the `/` is kept); not followed
    by a name, `path` gives way to `alone`. The pieces between occurrences are joined as they
    are, never copied one more time."""
    pieces = data.split(path)
    if len(pieces) == 1:
        return data
    out = [pieces[0]]
    before = pieces[0][-1] if pieces[0] else None  # (of the original text: the byte before each occurrence)
    keep_slash = inside.endswith(b"~")
    for piece in pieces[1:]:
        after = piece[0] if piece else None
        if (before is not None and (before in NAME or before == SLASH)) or (after is not None and after in NAME):
            out += (path, piece)  # inside a longer path or name
        elif after == SLASH and len(piece) > 1 and piece[1] in NAME:
            out += (inside, piece) if keep_slash else (memoryview(piece)[1:],)
        else:
            out += (alone, piece)
        before = piece[-1] if piece else path[-1]
    return b"".join(out)


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
