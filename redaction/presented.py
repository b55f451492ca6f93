"""Text as its reader sees it: the layers a tool or a terminal dresses text in, taken off.

An agent reads a key file through a tool that numbers its lines (`     31\\t…` from `cat -n`,
`nl` and Claude Code's Read, `31:…` from `grep -n`, `31→…`, `31 | …` from editors), a command's
output in terminal colours (ESC `[32m` … ESC `[0m`), and JSON that a tool printed, maybe holding
JSON in turn (`\\"`, `\\\\\\"`, `\\n`, `\\u001b`). None of that is part of what is written, and
each layer breaks a pattern that reads the text as written: a key's lines start with a number, a
token follows an `m`, a quote is a backslash.

`view(data)` gives the text with these layers off, in one pass over it, and a function that
takes spans found in that text back to the original's positions: redaction matches the view
and replaces in the original (a span that covers a layer replaces it too). What it takes off:
- line-number gutters at a line's start (after a newline, an escaped one at any depth, or a
  NUL, which separates strings): up to 8 spaces or tabs, an optional `file:` of grep, a number
  of up to 7 digits (a Telegram bot's id, 8 to 10 digits before a colon, is not one), and a tab
  (`→` and `│` too, raw or escaped), `|`, `:` or `-` (grep's context lines);
- ANSI escape sequences (CSI, OSC, two-character escapes), raw, JSON-escaped (`\\u001b`) or as a
  shell or a program's string writes them (`\\x1b`, `\\033`, `\\e[`);
- JSON string escapes at any depth: a run of backslashes before `n`, `r`, `t`, `"`, `'`, `/`
  becomes that character, `\\u00XX` the ASCII character it names.
Text without any of them costs one search and comes back as the same object.
"""

from __future__ import annotations

from bisect import bisect_right

from core import compiledre

_NUMBER = rb"[0-9]{1,7}"
_GREP_FILE = rb"(?:[A-Za-z0-9_-]{0,200}+[./][A-Za-z0-9_./-]{0,400}+:)?"  # possessive: a line's first word read once
_SEPARATOR = rb"(?:\t|\\+t|\xe2\x86\x92|\\+u2192| ?(?:\xe2\x94\x82|\\+u2502) ?| ?\| ?|:(?![:/=])|-(?=[^\s\x000-9]))"
GUTTER = rb"[ \t]{0,8}" + _GREP_FILE + _NUMBER + _SEPARATOR
_ANSI_REST = (rb"(?:\[[0-?]{0,32}[ -/]{0,4}[@-~]"
              rb"|\][^\x07\x1b\x00\\]{0,512}(?:\x07|\x1b\\|\\+u0007|\\+u001[bB]\\+\\)"
              rb"|[@-Z^_])")
# Three passes, each led by a literal or a small set of bytes so that the engine skips to where
# it may match (one alternation of all of them reads every byte several times over).
RAW_LINES = compiledre.compile(rb"[\n\x00]" + GUTTER)  # a newline, or a string's start (NUL), and a gutter
RAW_ESCAPES = compiledre.compile(rb"\x1b" + _ANSI_REST)
ESCAPED = compiledre.compile(
    rb"\\+(?:(?P<line>(?:r\\+)?n)" + GUTTER + rb"|(?:u001[bB]|x1[bB]|033|e(?=\[))" + _ANSI_REST
    + rb"|(?P<char>[nrt\"'/])|u00(?P<hex>[0-7][0-9a-fA-F]))")
GUTTER_FIRST = compiledre.compile(GUTTER)
_CHARACTERS = {b"n": b"\n", b"r": b"\r", b"t": b"\t"}


def view(data: bytes) -> tuple[bytes, object]:
    """`data` with its presentation layers off, and a function from spans of it
    ((start, end, …) tuples) to the same spans of `data`."""
    layers = _layers(data)
    if not layers:
        return data, _unchanged
    pieces, marks, pos, size = [], [], 0, 0  # marks: (start in view, its end, start in data, its end)
    for start, end, replacement in layers:
        if start < pos:
            continue  # inside a layer taken off already (a gutter's escaped tab)
        pieces += [data[pos:start], replacement]
        size += start - pos
        marks.append((size, size + len(replacement), start, end))
        size += len(replacement)
        pos = end
    pieces.append(data[pos:])
    return b"".join(pieces), _Back(marks)


def _layers(data: bytes) -> list:
    """(start, end, what the reader sees instead) of every layer, in order."""
    first = GUTTER_FIRST.match(data)
    found = [(0, first.end(), b"")] if first is not None else []
    found += [(m.start(), m.end(), data[m.start():m.start() + 1]) for m in RAW_LINES.finditer(data)]
    if b"\x1b" in data:
        found += [(m.start(), m.end(), b"") for m in RAW_ESCAPES.finditer(data)]
    if b"\\" in data:
        found += [(m.start(), m.end(), _replacement(m)) for m in ESCAPED.finditer(data)]
    return sorted(found)


def _replacement(found) -> bytes:
    if found.group("line") is not None:
        return b"\n"
    char = found.group("char")
    if char is not None:
        return _CHARACTERS.get(char, char)
    hexadecimal = found.group("hex")
    return bytes((int(hexadecimal, 16),)) if hexadecimal is not None else b""


def _unchanged(spans: list) -> list:
    return spans


class _Back:
    """Positions in the view back to positions in the original: between two layers taken off
    the text is the same, shifted; a position inside a replacement goes to its edge."""

    def __init__(self, marks: list):
        self.marks = marks
        self.starts = [mark[0] for mark in marks]

    def __call__(self, spans: list) -> list:
        return [(self.start(span[0]), self.end(span[1]), *span[2:]) for span in spans]

    def start(self, pos: int) -> int:
        index = bisect_right(self.starts, pos) - 1
        if index < 0:
            return pos
        view_start, view_end, start, end = self.marks[index]
        return start if pos < view_end else end + pos - view_end

    def end(self, pos: int) -> int:
        """An exclusive end: where the character before it ends."""
        if pos == 0:
            return 0
        last = pos - 1
        index = bisect_right(self.starts, last) - 1
        if index < 0:
            return pos
        view_start, view_end, start, end = self.marks[index]
        return end if last < view_end else end + last - view_end + 1
