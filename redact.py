"""Secrets that past sessions printed never go back into a model's context.

Every document trajectoriz outputs passes through `redact()` on its serialized bytes: well-known
secret shapes become `«REDACTED:<kind>:<first 8 hex of sha256(secret)>»` (the hash lets two
mentions of one secret be matched without revealing it). Each pattern starts with a literal, so
the regex engine skips through clean text at memchr speed, and a document without secrets costs
one pass per pattern and no copy.

Ordinary text is left alone: hashes, UUIDs and base64 payloads have none of these prefixes, and
assignments only count when an upper-case NAME ends in _TOKEN, _KEY, _SECRET or PASSWORD and the
value is not a placeholder ($VAR, <...>, ***).
"""

from __future__ import annotations

import hashlib
import re

# The patterns, each starting with a literal (the regex engine then scans for that literal at
# memchr speed), one pass over the document each. Kinds whose secrets share their first letters
# share a pass, each alternative a group named after its kind. Group "secret", when present, is
# the part replaced; `_accept` vets a match where a pattern cannot look back far enough.
_ASSIGNED = rb"[ \t]*=[ \t]*(?:\\?[\"'])?(?P<secret>(?![$<*{%])[^\s\"'\\$<>]{4,})"
PATTERNS = [
    rb"sk(?:(?P<anthropic>-ant-[A-Za-z0-9_\-]{20,})"
    rb"|(?P<openai>-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})"
    rb"|(?P<stripe>_(?:live|test)_[A-Za-z0-9]{16,}))",
    rb"A(?:(?P<google>Iza[0-9A-Za-z_\-]{35})|(?P<aws>(?:KIA|SIA)[0-9A-Z]{16}(?![A-Z0-9])))",
    rb"g(?:(?P<github>h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})"
    rb"|(?P<gitlab>lpat-[A-Za-z0-9_\-]{20,}))",
    rb"(?P<slack>xox[abposr]-[A-Za-z0-9\-]{10,})",
    rb"(?P<slack>hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,})",
    rb"(?P<stripe>rk_(?:live|test)_[A-Za-z0-9]{16,})",
    rb"(?P<private_key>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:(?!-----END).){0,20000}?"
    rb"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)",
    rb"(?P<jwt>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{10,})",
    rb"(?P<url_password>://[^\s:/@\"'\\<>]{1,256}:(?P<secret>[^\s@/\"'\\<>]{1,256})@)",
    rb"(?P<assignment>_(?:TOKEN|KEY|SECRET)" + _ASSIGNED + rb")",
    rb"(?P<assignment>PASSWORD" + _ASSIGNED + rb")",
]
_COMPILED = [re.compile(p, re.S) for p in PATTERNS]
_NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _kind(match: re.Match) -> str:
    """The kind whose group matched (a pattern's named groups are kinds, and "secret")."""
    return next(kind for kind, found in match.groupdict().items() if found is not None and kind != "secret")


def _accept(kind: str, match: re.Match) -> bool:
    data, start = match.string, match.start()
    before = data[start - 1] if start else 0
    if kind == "aws":
        return before not in _NAME
    if kind == "stripe":
        return not chr(before).isalnum()
    if kind == "assignment":
        return _is_secret_name(data, start, match.group(0).startswith(b"PASSWORD"))
    return True


def _is_secret_name(data: bytes, start: int, is_password: bool) -> bool:
    """An assignment counts when the whole NAME is upper-case (an environment variable, not a
    program's `sort_key`) and longer than its suffix (`X_KEY`, not `_KEY`)."""
    begin = start
    while begin > 0 and data[begin - 1] in _NAME:
        begin -= 1
    if begin > 0 and chr(data[begin - 1]).isalnum():
        return False
    return start > begin or is_password


def marker(kind: str, secret: bytes) -> bytes:
    digest = hashlib.sha256(secret).hexdigest()[:8]
    return f"«REDACTED:{kind}:{digest}»".encode()


def redact(data: bytes) -> tuple[bytes, dict]:
    """(bytes with secrets replaced, count per kind). The input is returned as is when clean."""
    counts: dict = {}
    for pattern in _COMPILED:
        if not pattern.search(data):
            continue

        def replace(match, pattern=pattern):
            kind = _kind(match)
            if not _accept(kind, match):
                return match.group(0)
            counts[kind] = counts.get(kind, 0) + 1
            if "secret" not in pattern.groupindex:
                return marker(kind, match.group(0))
            offset = match.start()
            start, end = match.span("secret")
            whole = match.group(0)
            return whole[: start - offset] + marker(kind, match.group("secret")) + whole[end - offset:]

        data = pattern.sub(replace, data)
    return data, counts


def redact_text(text: str) -> tuple[str, dict]:
    """`redact` of a text (until the rewrite that works on text lands)."""
    data, counts = redact(text.encode("utf-8", "surrogatepass"))
    return (data.decode("utf-8", "surrogatepass"), counts) if counts else (text, counts)
