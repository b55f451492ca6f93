"""Secrets that past sessions printed never go back into a model's context.

Every document passes through `clean_tree()` before it is serialized: each string of it, dict
keys included, is read as the agent's reader saw it (presented.py: line-number gutters, terminal
escapes and JSON escaping at any depth taken off, with a map back to the original), and each
secret found is replaced, in the original, by `«REDACTED:<kind>:<first 8 hex of sha256(secret as UTF-8)>»` (the hash lets two
mentions of one secret be matched without revealing it). A secret found once is a secret at
every other mention of it in the document, its session (of 6 characters or more, standing
alone: a password a rule found in a URL, quoted bare in a reply; each line of a key found).
`redact_text()` does the same to one string. Both return their input itself when nothing is
found.

| kind | what it matches |
|---|---|
| anthropic | `sk-ant-…` (API, admin and OAuth keys) |
| openai | `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` whose body looks random |
| openrouter | `sk-or-…` |
| stripe | `sk_live_`, `sk_test_`, `rk_live_`, `rk_test_` keys, `whsec_` webhook secrets |
| google | API keys `AIza` + 35 |
| google_oauth | access tokens `ya29.…`, client secrets `GOCSPX-` + 28 |
| aws | access key ids `AKIA`, `ASIA`, `ABIA`, `ACCA` + 16 capitals and digits (also after `_`: `MY_KEY_AKIA…`; a small letter after it ends it: `KEY_AKIA…b into`) |
| aws_secret | the value of `aws_secret_access_key`, `AWS_SECRET_ACCESS_KEY`, `SecretAccessKey` |
| azure | `AccountKey=…`, `SharedAccessKey=…`, Entra client secrets (`abc8Q~…`) |
| github | `ghp_`, `gho_`, `ghu_`, `ghs_` (app), `ghr_` (refresh) tokens, `github_pat_…` |
| gitlab | `glpat-`, `gldt-`, `glrt-`, `glptt-`, `glcbt-`, `glft-`, `glimt-`, `glagent-`, `gloas-`, `glsoat-`, runner `GR1348941…` |
| slack | `xoxb-`, `xoxp-`, `xoxa-`, … tokens, `xapp-` app tokens, `hooks.slack.com/…` webhook paths |
| discord | webhook `…/api/webhooks/<id>/<token>` (id and token); a bot token within 512 characters of `discord` |
| telegram | a bot token's secret half (`123456789:` then `AA` + 33) |
| npm | `npm_` + 36 |
| huggingface | `hf_…` |
| pypi | `pypi-AgE…` |
| docker | `dckr_pat_…`, `dckr_oat_…` |
| digitalocean | `dop_v1_` + 64 hex |
| shopify | `shpat_`, `shpca_`, `shppa_`, `shpss_` + 32 hex |
| sendgrid | `SG.<22>.<43>` |
| twilio | API keys `SK` + 32 hex |
| mailgun | `key-` + 32 hex |
| vault | HashiCorp Vault `hvs.`, `hvb.`, `hvr.` tokens |
| grafana | `glsa_…`, `glc_…`, `eyJrIjoi…` |
| sentry | `sntrys_…`, `sntryu_` + 64 hex |
| databricks | `dapi` + 32 hex |
| linear | `lin_api_` + 40, `lin_oauth_` + 64 hex |
| postman | `PMAK-…` |
| age | `AGE-SECRET-KEY-1` + 58 |
| groq, xai, perplexity, replicate, tavily | `gsk_…`, `xai-…`, `pplx-…`, `r8_` + 37, `tvly-…` |
| doppler, atlassian, heroku, newrelic, pulumi | `dp.pt.…`, `ATATT3…`, `HRKU-…`, `NRAK-…`, `pul-` + 40 hex |
| planetscale, square, supabase, notion | `pscale_tkn_…`, `sq0atp-…`/`sq0csp-…`, `sbp_` + 40 hex, `ntn_…`/`secret_` + 43 |
| private_key | a PEM, OpenSSH or PGP private key block, through gutters (a number and spaces too, as `less -N` prints) and indentation; with no END line, its BEGIN line and key lines only; lines dressed otherwise (`> `, `+`) up to an END line within 16 KB |
| jwt | `eyJ….eyJ….…` (three base64url parts) |
| url_password | the password of `scheme://user:password@host`, also URL-encoded (`%3A%2F%2Fuser%3Apw%40`) |
| authorization | the credentials of an `Authorization:` header or field (`Bearer`, `Basic`, `token`, …) |
| password | the value of a password-like name (`password`, `passwd`, `pwd`, `passphrase`, `DB_PASS`, `Password=…;`), of `mysql`/`mysqldump`/`mariadb -p…`, `sshpass -p`, `docker login -p`, `curl -u user:…`, a `.netrc` entry |
| assignment | the value of another secret's name (`API_KEY`, `apiKey`, `client_secret`, `access_token`, `auth`, `credentials`, `--token …`) |

A token with a prefix counts where no small letter or digit comes before it (`task-…` holds no
`sk-` key; `KEY_sk-…` and `MYKEYsk-…` do), anywhere where its prefix is distinctive alone
(`AKIA`, `ghp_`, `github_pat_`, `sk-proj-`, `sk-ant-`, `xoxb-`, `glpat-`, …: `KEY_AKIA…`,
`MYghp_…`), and has its vendor's length and alphabet; a placeholder (`sk_live_xxxx…`,
`AKIAIOSFODNN7EXAMPLE`) does not. An assignment is a name, an optional closing quote, `=`, `:`,
`:=` or `=>` (a space after a `--flag`), and a value, quoted or not. The name's last word decides:
`token`, `secret`, `password`, `passwd`, `pwd`, `auth`, `credentials`, and `key` after `api`,
`access`, `secret`, `private`, … or after `_` (`STRIPE_KEY`, `stripe_key`); not `MAX_TOKENS`, `token_count`,
`sort_key`, `PUBLIC_KEY`, `CACHE_KEY`, `page_token`, `ClientRequestToken` (idempotency), nor a
part of an ARN (`…:secret:…`). How the value is judged:
- token-, secret- and key-like names: a literal of a token's characters (no spaces or brackets)
  that looks random: letters and digits mixed, where the parts between punctuation are not all
  words (`user_profile_v2`, `python3.11`, `Socks5Auth`, `2024-01-15` are; `ia8bmmCTJbz2`,
  `TGEsd0VYLklf3` are not: `is_words`), or a UUID, or 20
  letters whose mixed case camelCase does not explain. Calls and subscripts (`getpass()`,
  `os.environ[…]`) are code.
- password-like names: a quoted literal is a secret (but not a constant's label such as
  `FORCE_CHANGE_PASSWORD`, nor a sentence); an unquoted value too unless it is code: a call, a
  subscript, a dotted name, a snake_case or camelCase variable made of words (`dbPass2`, not
  `y8p0aOW9mkOhzHr`), a type or keyword (`str`,
  `None`); after `:` with no space, only a value that looks random (`DB_PASSWORD:x9Qw2LmZp4`,
  not `password:str`); a lone word only where it ends its line or a clause (` ;`, ` ,`, ` |`
  after it) after `: ` or a bare `=` (YAML, INI, .env), not after ` = ` (code) nor in prose
  (`pwd: expected bytes`).
- never secrets: placeholders (`$VAR`, `${VAR}`, `<your key>`, `***`, `{{ x }}`, `…`, values
  with `your`, `example`, `xxxx`, `changeme`, `redacted`), paths, URLs, ARNs, values of fewer than
  four distinct characters, and words that stand for themselves (`password`, `secret`, `test`).
A bare value's final dots end its sentence and stay; a marker never takes more than the secret.

Speed: the distinct strings of a document are joined with NUL (which no pattern matches) and
lowered once, as bytes, so that offsets stay put. Each pass is one regular expression whose
alternatives start at an anchor, a character rare in ordinary text (k, g, x, j, q, y, …) taken
from the rules' prefixes, each alternative led by a literal, so that the engine scans at memchr
speed and tries little where the anchor occurs; the original case and the value's judgment are
checked only where a pass matched. Open repeats read at most 1024 characters, and a pass goes on
past a token it read, so a run of fake prefixes costs linear time. Replacements are mapped back
to the strings that hold them only when something was found.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import os
import re
from bisect import bisect_right
from collections import namedtuple

from atif.serialize import limit_depth, MAX_DEPTH
from core import compiledre
from redaction import presented

SEPARATOR = "\x00"
LONGEST = 1024  # a pattern's open repeat reads at most this much: a rejected candidate is cheap
ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
WORD = ALNUM | frozenset(b"_")
LOWER = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")  # what continues a word in lower case
TOKEN = WORD | frozenset(b"-")
EOL = rb"(?:\r?\n|\\r\\n|\\n)"
SPACE = rb"(?:[ \t\r\n]|\\[nrt])+"
NAME_END = rb"(?P<e>)(?:\\{0,8}[\"'])?"
SEP = rb"[ \t]*(?::=|=>|=(?![=~>])|:(?![:/]))[ \t]*"
QUOTED_VALUE = rb"[^\"'`\\\r\n\x00]"
BARE_VALUE = rb"[^\s\"'`\\,;&|()\[\]{}<>\x00]"
VALUE = rb"(?P<q>\\{0,8}[\"'`])?(?P<value>(?(q)" + QUOTED_VALUE + rb"{1,256}|" + BARE_VALUE + rb"{1,256}))"
QUOTED_OR_WORD = rb"(?P<q>\\{0,8}[\"'])?(?P<value>(?(q)[^\"'\\\r\n\x00]{1,256}|[^\s\"'`\\;&|\x00]{1,256}))"


def marker(kind: str, secret: bytes | str) -> str:
    """What replaces a secret: its kind and 8 hex digits of a digest of the secret, keyed with
    the user's key (redaction/markerkey.py) and the session it is in (`markers_of`): the same for every
    mention of one secret in one session, and no oracle for a guess, even one a reader writes
    into a session of its own (which gives its own markers)."""
    if isinstance(secret, str):
        secret = secret.encode("utf-8", "surrogatepass")
    import hashlib  # here, with hmac: they load OpenSSL, and most texts hold no secret
    import hmac

    digest = hmac.new(marker_key(), _scope.get() + b"\0" + secret, hashlib.sha256).hexdigest()
    return f"«REDACTED:{kind}:{digest[:8]}»"


_MARKER = compiledre.compile("«REDACTED:([^:»]+):[0-9a-f]{8}»")


def kinds_only(text: str) -> str:
    """The text with each secret replaced by its kind alone: what an id made from a digest of
    text (miniswe's runs) is computed over, so that the id is no digest of a secret and stays
    the same for every user."""
    return _MARKER.sub(r"«REDACTED:\1»", redact_text(text)[0])


_scope: contextvars.ContextVar = contextvars.ContextVar("marker_scope", default=b"")


@contextlib.contextmanager
def markers_of(identity: str):
    """Markers made meanwhile (in this thread) are those of the session `identity`."""
    token = _scope.set(identity.encode("utf-8", "surrogatepass"))
    try:
        yield
    finally:
        _scope.reset(token)


_keys: dict = {}  # key file -> key, for the environments this process has run commands in


def marker_key() -> bytes:
    """The key of the environment a command runs in (`os.environ`: main() hands it to the
    command; tests that run commands in one process swap it), read when the first marker is
    made: a command that finds no secret never reads it."""
    from redaction import markerkey

    path = markerkey.path_of(os.environ)
    if path not in _keys:
        _keys[path] = markerkey.load(os.environ)
    return _keys[path]


# ---------------------------------------------------------------------------------------------
# How a value is judged.

_PUNCTUATION = rb"-_./:+@#~=,"
# Socks5Auth, XMLHttpRequest; a word after digits starts with a capital (`ia8bmmCTJbz2` is no words)
_CAMEL_WORDS = rb"(?:(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z]))[0-9]{0,3}(?![a-z])){2,}"
_WORDY = compiledre.compile(rb"(?:(?>" + _CAMEL_WORDS + rb"|(?:[A-Z]?[a-z]+|[A-Z]+)[0-9]{0,3}|[0-9]+[A-Za-z]{0,2})(?=["
                            + _PUNCTUATION + rb"]|\Z)|[" + _PUNCTUATION + rb"])*")
_UUID = compiledre.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_DIGIT = compiledre.compile(rb"[0-9]")
_LETTER = compiledre.compile(rb"[A-Za-z]")
_LONG_LETTERS = compiledre.compile(rb"[A-Za-z]{20,}")
_LOWER_RUN = compiledre.compile(rb"[a-z]+")
_CAPITALS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PLACEHOLDER = compiledre.compile(rb"your|xxxx|example|placeholder|change_?me|redacted|replace|\*\*\*|\.\.\.|\{\{|\$\{|\xc2\xab|\xe2\x80\xa6")
_PUBLIC_KEY_TYPES = (b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-")
NOT_SECRETS = frozenset(b"""none null nil true false undefined str string bytes int bool any optional
    secretstr password passwd pwd pass passphrase secret token key value val text input data field
    required default empty hidden self this new old env getpass prompt stdin masked test dummy sample
    fake mock demo foo bar""".split())


def is_placeholder(value: bytes) -> bool:
    """`$VAR`, `${VAR}`, `<your key>`, `***`, `%(pw)s`, `your-api-key-here` and the like."""
    lowered = value.lower()
    return (value[:1] in (b"$", b"<", b"{", b"%", b"*", b"[", b"(", b"-")
            or _PLACEHOLDER.search(lowered) is not None or len(set(value)) < 4)


def looks_random(value: bytes) -> bool:
    """Machine-made rather than words: not only words (each part between punctuation a word or
    camelCase words, maybe with short numbers: `user_profile_v2`, `python3.11`, `2024-01-15`,
    `Socks5Auth`) and letters and digits mixed, or a UUID, or a run of 20 letters whose case
    camelCase does not explain."""
    if len(value) < 8 or value.startswith(_PUBLIC_KEY_TYPES):
        return False
    if _DIGIT.search(value) is None or _LETTER.search(value) is None:
        return any(_mixed_case(run) for run in _LONG_LETTERS.findall(value)) and not is_words(value)
    return _UUID.fullmatch(value) is not None or not is_words(value)


_PART = compiledre.compile(rb"[^" + _PUNCTUATION + rb"]+")
_ACRONYM = compiledre.compile(rb"[A-Z]{2,}")
_LONG_ACRONYM = compiledre.compile(rb"[A-Z]{6}")
_VOWELS = b"aeiouAEIOU"
_CONSONANTS = compiledre.compile(rb"[b-df-hj-np-tv-z]{4}")  # `jlbq`, `Dckz`: no syllable


def is_words(value: bytes) -> bool:
    """Words run together (`_WORDY`) that read as words: no four small consonants in a row (not
    `jlbqVed`), and in each part that mixes small letters and capitals at most one run of
    capitals, of five at most (`XMLHttpRequest`; not `TGEsd0VYLklf3`, `faxBYNZNXUQ7`), and a vowel
    in every six letters of eight or more (not `aj868MkzDGKX3`): random letters and digits fit
    `_WORDY` one time in a few."""
    if _WORDY.fullmatch(value) is None:
        return False
    for part in _PART.findall(value):
        if _CONSONANTS.search(part):
            return False
        letters = part.translate(None, b"0123456789")
        if letters.isupper() or letters.islower() or not letters:
            continue
        vowels = len(letters) - len(letters.translate(None, _VOWELS))
        if (len(_ACRONYM.findall(part)) > 1 or _LONG_ACRONYM.search(part)
                or (len(letters) >= 8 and 6 * vowels < len(letters))):
            return False
    return True


def _mixed_case(letters: bytes) -> bool:
    """Random case: a quarter of the letters capitals, runs of small letters short (camelCase
    words have long ones: `getAccessTokenFromEnvironment`)."""
    capitals = len(letters) - len(letters.translate(None, _CAPITALS))
    runs = len(_LOWER_RUN.findall(letters))
    return 4 * capitals >= len(letters) and runs > 0 and len(letters) - capitals <= 2.5 * runs


_IDENTIFIER = compiledre.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CAMEL = compiledre.compile(rb"[a-z][A-Z]")


_DOTTED = compiledre.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_LABEL = compiledre.compile(rb"[A-Za-z]+(?:[-_][A-Za-z]+)+")
_SECRET_WORD = compiledre.compile(rb"pass|secret|token|key", re.I)
_TOKEN_CHARACTERS = compiledre.compile(rb"[A-Za-z0-9+/=_.~:@%!#$*-]+")
_LINE_END = compiledre.compile(rb"[ \t]*(?:\r|\n|\\[rn]|[\"'`]|\x00|\Z)|[ \t]+[;,|]")  # a line's or a clause's end


class Assignment(namedtuple("Assignment", "value quoted between after ends_line")):
    """An assigned value and what surrounds it: `between` the name and it (quotes, separator,
    spaces), the character `after` it, and whether only its line's end follows."""
    __slots__ = ()


def is_expression(value: bytes, after: bytes) -> bool:
    """A call, a subscript or an attribute (`getpass()`, `os.environ[…]`, `process.env.KEY`)."""
    return after in (b"(", b"[") or _DOTTED.fullmatch(value) is not None


def is_variable(value: bytes) -> bool:
    """An identifier in snake_case or camelCase made of words (`user_password`, `dbPass2`; not
    `y8p0aOW9mkOhzHr` nor `S3cure_Pa55`), or a word such as `None` or `str`."""
    if value.lower() in NOT_SECRETS:
        return True
    return _IDENTIFIER.fullmatch(value) is not None and (
        b"_" in value.strip(b"_") or _CAMEL.search(value) is not None) and is_words(value)


def is_path(value: bytes) -> bool:
    return value[:1] in (b"/", b"~") or value.startswith((b"./", b"../"))


def is_literal(assigned: Assignment) -> bool:
    """Not a placeholder, a path, an ARN or URL, a sentence (a field's description), or a quote
    that closes a string rather than opens a value (`prompt='Password: ', …`)."""
    value = assigned.value
    return not (is_placeholder(value) or is_path(value) or value.lower() in NOT_SECRETS
                or value.startswith(b"arn:") or b"://" in value or value.count(b" ") > 3
                or (assigned.quoted and value[:1] in (b" ", b",", b";", b")", b"]", b"}", b"+")))


def is_random_value(assigned: Assignment) -> bool:
    """A token-, secret- or key-like name's value: a literal of a token's characters (no spaces,
    brackets or pipes: `Jobs[-1].JobId` is a path into data) that looks random."""
    return (is_literal(assigned) and _TOKEN_CHARACTERS.fullmatch(assigned.value) is not None
            and looks_random(assigned.value) and assigned.after not in (b"(", b"["))


def is_password(assigned: Assignment) -> bool:
    """A password-like name's value: a quoted literal (not a constant's label such as
    `NO_PASSWORD`), or an unquoted one that is not code. A lone word is a password where it
    ends its line after `: ` or a bare `=` (YAML, INI, .env), not after ` = ` (code) nor in
    prose (`pwd: expected bytes`)."""
    value, between = assigned.value, assigned.between
    if len(value) < 3 or not is_literal(assigned):
        return False
    if assigned.quoted:
        return not (_LABEL.fullmatch(value) and _SECRET_WORD.search(value))
    if is_expression(value, assigned.after) or is_variable(value):
        return False
    if b":" in between and not between[-1:].isspace() and not looks_random(value):
        return False  # `password:str`, `pwd:expected`; not `DB_PASSWORD:x9Qw2LmZp4Rt`
    if value.isalpha():
        return assigned.ends_line and b" =" not in between and b"= " not in between
    return True


# ---------------------------------------------------------------------------------------------
# The rules. Each is tried where its pass matched; it returns the spans it accepts, as
# (start, end, kind, specific) in the joined bytes: `specific` wins over a generic assignment
# for the same span.

class Token(namedtuple("Token", "kind rest exact random before back prefix_len",
                        defaults=(None, False, LOWER, 0, 0))):
    """A secret with a known shape: the match is the secret, with the `back` characters before
    it (its prefix up to the pass's anchor). `exact`: the shape in the original case; `random`:
    what follows the first `prefix_len` characters must look random; `before`: what may not
    precede it in the original text (by default a small letter or a digit: `task-…` is no `sk-`
    key, `KEY_sk-…` and `MYKEYsk-…` are; None for a prefix distinctive enough alone). (The rules are named tuples: `dataclasses` costs every first discovery its
    import.)"""
    __slots__ = ()

    def spans(self, data, match, group):
        start, end = match.start() - self.back, match.end()
        secret = data[start:end]
        if self.exact and not re.fullmatch(self.exact, secret):
            return []
        body = secret[self.prefix_len:]
        if is_placeholder(body) or (self.random and not looks_random(body)):
            return []
        if end - start >= LONGEST:  # longer than a pattern reads: the rest of the run goes too
            end = _RUN.match(data, end).end()
        return [(start, without_full_stop(data, start, end), self.kind, 1)]


class Value(namedtuple("Value", "kind rest exact before check specific back",
                        defaults=(None, None, None, 1, 0))):
    """A secret that is the `value` group of the match (what surrounds it stays)."""
    __slots__ = ()

    def spans(self, data, match, group):
        start, end = match.span(f"{group}_value")
        end = without_full_stop(data, start, end)
        secret = data[start:end]
        if self.exact and not re.fullmatch(self.exact, secret):
            return []
        if is_placeholder(secret) or secret.lower() in NOT_SECRETS:
            return []
        if self.check and not self.check(data, match):
            return []
        return [(start, value_end(data, start, end, False), self.kind, self.specific)]


class Assigned(namedtuple("Assigned", "rest flag", defaults=(False,))):
    """`name <separator> value` where the keyword ends the name: the name is read back from
    the keyword, its last word decides the kind, and the value is judged for that kind."""
    __slots__ = ()
    before = None
    back = 0

    def spans(self, data, match, group):
        name_end = match.start(f"{group}_e")
        name = name_before(data, name_end)
        kind = kind_of_name(name)
        if kind is None or (self.flag and not name.startswith(b"-")) or data[:name_end - len(name)].endswith(b":"):
            return []  # no secret's name, or a part of an ARN or URN (`…:secret:aws/…`)
        quoted = match.start(f"{group}_q") >= 0
        start, end = match.span(f"{group}_value")
        end = end if quoted else without_full_stop(data, start, end)
        assigned = Assignment(data[start:end], quoted, data[name_end:start], data[end:end + 1],
                              _LINE_END.match(data, end) is not None)
        if not (is_password(assigned) if kind == "password" else is_random_value(assigned)):
            return []
        return [(start, value_end(data, start, end, quoted), kind, 0)]


class Custom(namedtuple("Custom", "rest function before back", defaults=(None, 0))):
    """A rule that works out its spans itself: `function(data, match, group) -> spans`."""
    __slots__ = ()

    def spans(self, data, match, group):
        return self.function(data, match, group)


_RUN = compiledre.compile(rb"[A-Za-z0-9_-]*")
_NAME_BACKWARDS = compiledre.compile(rb"[A-Za-z0-9_.-]*")  # read on the reversed text before a keyword
_WORDS = compiledre.compile(rb"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PASSWORD_WORDS = frozenset((b"password", b"passwd", b"passphrase", b"passwort", b"pwd"))
_KEY_QUALIFIERS = frozenset(b"""api access secret private signing encryption master auth client
    account app service shared session admin deploy webhook license subscription storage consumer
    root user write read management""".split())
_GLUED_KEYS = frozenset(q + b"key" for q in _KEY_QUALIFIERS)
_NOT_SECRET_NAMES = frozenset(b"""public publishable sort primary foreign cache partition page
    next continuation sync cursor pagination resume idempotency dedup routing lookup row shard max
    min num count eos bos pad unk sep cls mask special start stop end first last hash hashed
    file path url uri type name""".split())
_NOT_SECRET_TOKENS = frozenset((b"client", b"request", b"change", b"cancellation"))  # AWS's, .NET's


def name_before(data: bytes, end: int) -> bytes:
    """The assignment's name that ends at `end`: letters, digits, `_`, `.` and `-`, without the
    letter of an escape (`\\nDB_PASSWORD` names DB_PASSWORD)."""
    start = end - _NAME_BACKWARDS.match(data[max(0, end - 128):end][::-1]).end()
    if start > 0 and data[start - 1] == 92 and data[start:start + 1] in (b"n", b"t", b"r"):
        start += 1
    return data[start:end]


def kind_of_name(name: bytes) -> str | None:
    """The kind a name's value is a secret of, or None: the last word decides
    (`MAX_TOKENS` and `token_count` name no secret)."""
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words or any(w in _NOT_SECRET_NAMES for w in words[:-1]):
        return None
    last = words[-1]
    if last in _PASSWORD_WORDS or last.endswith((b"password", b"passwd")) or (last == b"pass" and len(words) > 1):
        return "password"
    if last.endswith(b"token"):
        return None if any(w in _NOT_SECRET_TOKENS for w in words) else "assignment"
    if last.endswith(b"secret") or last in (b"auth", b"credential", b"credentials"):
        return "assignment"
    if last in _GLUED_KEYS or (last == b"key" and len(words) > 1 and (
            words[-2] in _KEY_QUALIFIERS or name[-4:-3] == b"_")):
        return _key_kind(words)
    return None


def _key_kind(words: list) -> str:
    """AWS's and Azure's names for their secret keys have kinds of their own."""
    if words[-3:-1] == [b"secret", b"access"]:
        return "aws_secret"
    if words[-2:-1] == [b"account"] or words[-1] == b"accountkey" or words[-3:-1] == [b"shared", b"access"]:
        return "azure"
    return "assignment"


def _private_key(data, match, group):
    """A key block: BEGIN to END; with no END line, BEGIN and the key's lines only. Lines that
    something other than a gutter dresses (`> ` of a quote, a diff's mark, a prefix of the
    tool's) still make a block where an END line follows within KEY_SPAN and a run of key
    characters stands between."""
    start, begin = match.start(), match.end(f"{group}_begin")
    if match.start(f"{group}_end") >= 0:
        lines_end, end = key_lines_end(data, begin, match.start(f"{group}_end")), match.end(f"{group}_end")
    else:
        lines_end = end = key_lines_end(data, begin, match.end())
        dressed = _dressed_block_end(data, begin)
        if dressed:
            return [(start, dressed, "private_key", 1)]
    if not lines_end or is_placeholder(data[begin:lines_end].strip(b" \t\r\n\\")):
        return []  # no key lines, or `XXXX`
    return [(start, end, "private_key", 1)]


KEY_SPAN = 16384  # bytes from a BEGIN line to its END line, at most (an RSA 8192 key is ~6.5 KB)
_KEY_END = compiledre.compile(rb"-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----", re.I)
_KEY_RUN = compiledre.compile(rb"[A-Za-z0-9+/]{40,}")
_KEY_BODY = compiledre.compile(rb"[A-Za-z0-9+/]{16,}={0,2}")  # a key's line, its last one too


def _dressed_block_end(data: bytes, begin: int) -> int:
    """The end of the END line that closes a block whose lines are dressed, or 0."""
    limit = data.find(b"\x00", begin, begin + KEY_SPAN)
    found = _KEY_END.search(data, begin, limit if limit >= 0 else begin + KEY_SPAN)
    if found is None or _KEY_RUN.search(data, begin, found.start()) is None:
        return 0
    return found.end()


_KEY_LINE = compiledre.compile(rb"(?P<sep>[ \t]*" + EOL + rb"|[ \t]+)[ \t]*(?:>[ \t]?){0,8}(?:[0-9]{1,7} +(?=[A-Za-z0-9+/=]{4,}(?:[\r\n\x00\\]|\Z)))?(?:(?P<header>[A-Z][A-Za-z-]{1,30}: [^\r\n\\\x00]{0,200})"
                               rb"|(?P<line>[A-Za-z0-9+/=]*))")


_LINE_BREAK = compiledre.compile(rb"[ \t]*(?:\r|\n|\\[rn]|-----|\Z)")


def key_lines_end(data: bytes, pos: int, limit: int) -> int:
    """Where the key's lines after its BEGIN line end (0 when it has none): headers, one blank
    line, then base64 lines; a line shorter than 40 characters is its last."""
    end, seen_line = 0, False
    while pos < limit and (line := _KEY_LINE.match(data, pos, limit)) is not None:
        body = line.group("line")
        if line.group("header") is not None and not seen_line:
            pos = line.end()
            continue
        if not body:
            if seen_line:
                break
            pos = line.end()
            continue
        if _LINE_BREAK.match(data, line.end(), limit) is None and len(body) < 40:
            break  # a word in a sentence (`key omitted`), not a line of the key
        if not seen_line and len(body) < 40 and body.isalpha() and body.islower():
            break  # a lone word after the BEGIN line, where the match ends (`…KEY----- risk-…`)
        seen_line, pos, end = True, line.end(), line.end()
        if len(body) < 40:
            break
    return end


def _telegram(data, match, group):
    """`<bot id>:AA…`: the part after the colon, when 8 to 10 digits start a word before it."""
    colon = match.start()
    digits = colon
    while digits > 0 and 48 <= data[digits - 1] <= 57:
        digits -= 1
    start, end = colon + 1, match.end()
    if not 8 <= colon - digits <= 10 or not starts_word(data, digits):
        return []
    if not re.fullmatch(rb"AA[A-Za-z0-9_-]{33}", data[start:end]):
        return []
    return [(start, end, "telegram", 1)]


_QUOTED_RUN = compiledre.compile(QUOTED_VALUE + rb"*")
_BARE_RUN = compiledre.compile(BARE_VALUE + rb"*")


def value_end(data: bytes, start: int, end: int, quoted: bool) -> int:
    """A value as long as a pattern reads (256) goes on to where it ends."""
    if end - start < 256:
        return end
    return (_QUOTED_RUN if quoted else _BARE_RUN).match(data, end).end()


def without_full_stop(data: bytes, start: int, end: int) -> int:
    """A bare value's last dots end the sentence it stands in, not the secret."""
    while end - start > 1 and data[end - 1] == 46:
        end -= 1
    return end


def starts_word(text: bytes, pos: int, before: frozenset = ALNUM) -> bool:
    """Nothing of `before` precedes `pos`, or an escape does (`\\nsk-…` in JSON a tool printed)."""
    return pos == 0 or text[pos - 1] not in before or text[pos - 2:pos] in (b"\\n", b"\\t", b"\\r")


_MYSQL_PASSWORD = compiledre.compile(rb"(?<=[ \t])-p(?:\\{0,8}'(?P<a>[^'\\\r\n\x00]+)\\{0,8}'|\\{0,8}\"(?P<b>[^\"\\\r\n\x00]+)\\{0,8}\""
                                     rb"|(?P<c>[^\s'\"`;&|\\\x00]+))")


def _command_password(data, match, group):
    """`mysql … -p<pw>`, `mysqldump`, `mariadb`: the value attached to a lower-case -p."""
    found = _MYSQL_PASSWORD.search(data, match.start(), match.end())
    if found is None:
        return []
    start, end = found.span(found.lastgroup)
    if is_placeholder(data[start:end]):
        return []
    return [(start, end, "password", 1)]


def _lower_p(data, match):
    """The flag before the value is `-p`, not `-P` (sshpass, docker login: a prompt, a port)."""
    return b"-p" in data[match.start():match.end()]


def _authorization(data, match, group):
    """`Authorization: <scheme> <credentials>`: Basic credentials as they are, others when they
    look random (`Bearer $TOKEN` and `Bearer <token>` stay)."""
    start, end = match.span(f"{group}_value")
    end = without_full_stop(data, start, end)
    value = data[start:end]
    scheme = data[match.start(f"{group}_scheme"):match.end(f"{group}_scheme")].strip().lower()
    if is_placeholder(value) or len(value) < 8:
        return []
    if scheme != b"basic" and not looks_random(value):
        return []
    return [(start, value_end(data, start, end, False), "authorization", 0)]


# One pass per anchor: a character that is rare in ordinary text (k, g, x, j, q, …) and occurs
# early in the prefixes of the rules it carries. Each rule's expression starts at the anchor (the
# part of its prefix before it is checked by a lookbehind, and `back` puts it in the span) and
# reads the lower-cased text; `exact` is the shape in the original case. Within a pass, the first
# alternative that matches at a place is the one vetted.
PASSES: dict[bytes, list] = {
    b"k": [
        Token("anthropic", rb"-ant-(?<=sk-ant-)[a-z0-9_-]{20,}", random=True, back=1, prefix_len=7, before=None),
        Token("openrouter", rb"-or-(?<=sk-or-)[a-z0-9_-]{20,}", random=True, back=1, prefix_len=6, before=None),
        Token("openai", rb"-(?<=sk-)(?:proj|svcacct|admin)-[a-z0-9_-]{20,}", rb"sk-[a-z]+-[A-Za-z0-9_-]+",
              random=True, before=None, back=1, prefix_len=3),
        Token("openai", rb"-(?<=sk-)(?!ant-|or-)(?:none-)?[a-z0-9_-]{20,}", rb"sk-[A-Za-z0-9_-]+",
              random=True, back=1, prefix_len=3),
        Token("newrelic", rb"-(?<=nrak-)[a-z0-9]{27}(?![a-z0-9])", rb"NRAK-[A-Z0-9]{27}", back=3, before=None),
        Token("postman", rb"-(?<=pmak-)[a-f0-9]{24}-[a-f0-9]{34}(?![a-z0-9])", rb"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
              before=None, back=3),
        Token("stripe", rb"_(?<=[sr]k_)(?:live|test)_[a-z0-9]{16,}", rb"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
              back=1),
        Token("groq", rb"_(?<=gsk_)[a-z0-9]{40,}", random=True, back=2, prefix_len=4),
        Token("docker", rb"r_(?<=dckr_)(?:pat|oat)_[a-z0-9_-]{20,}", rb"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}",
              before=None, back=2),
        Token("mailgun", rb"ey-[0-9a-f]{32}(?![a-z0-9])", random=True, before=TOKEN, prefix_len=4),
        Value("password", rb"er(?<=docker)[ \t]+login\b[^\r\n\x00;|&]{0,300}?[ \t](?:-p|--password)[ \t=]+"
              + QUOTED_OR_WORD, before=WORD, check=_lower_p, back=3),
        Value("discord", rb"s/(?<=/api/webhooks/)(?P<value>[0-9]{17,20}/[a-z0-9_-]{60,68})",
              rb"[0-9]{17,20}/[A-Za-z0-9_-]{60,68}"),
        Value("azure", rb"ey=(?<=accountkey=)(?P<value>[a-z0-9+/]{40,}={0,2})"),
        Value("azure", rb"ey=(?<=sharedaccesskey=)(?P<value>[a-z0-9+/]{40,}={0,2})"),
        Assigned(rb"en(?<=token)" + NAME_END + SEP + VALUE),
        Assigned(rb"ey" + NAME_END + SEP + VALUE),
        Token("twilio", rb"(?<=sk)[0-9a-f]{32}(?![a-z0-9])", rb"SK[0-9a-fA-F]{32}", random=True, back=1,
              prefix_len=2),
    ],
    b"g": [
        Token("github", rb"h[pousr]_[a-z0-9]{30,}", rb"gh[pousr]_[A-Za-z0-9]{30,}", before=None),
        Token("github", rb"ithub_pat_[a-z0-9_]{22,}", rb"github_pat_[A-Za-z0-9_]{22,}", before=None),
        Token("gitlab", rb"l(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat)-[a-z0-9_-]{20,}", random=True,
              before=None, prefix_len=3),
        Token("grafana", rb"lsa_[a-z0-9]{32}_[a-f0-9]{8}(?![a-z0-9])", before=None),
        Token("grafana", rb"lc_[a-z0-9+/]{32,}={0,3}", random=True, prefix_len=4),
        Token("gitlab", rb"r1348941[a-z0-9_-]{20,}", rb"GR1348941[A-Za-z0-9_-]{20,}", before=None),
        Token("google_oauth", rb"ocspx-[a-z0-9_-]{28}(?![a-z0-9_-])", rb"GOCSPX-[A-Za-z0-9_-]{28}", before=None),
        Token("sendgrid", rb"\.(?<=sg\.)[a-z0-9_-]{22}\.[a-z0-9_-]{43}(?![a-z0-9_-])",
              rb"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", back=1),
    ],
    b"x": [
        Token("slack", rb"ox[abposre]-[a-z0-9-]{10,}", rb"xox[abposre]-[A-Za-z0-9-]{10,}", before=None),
        Token("slack", rb"app-[0-9]-[a-z0-9-]{20,}", rb"xapp-[0-9]-[A-Za-z0-9-]{20,}", before=None),
        Token("xai", rb"ai-[a-z0-9]{40,}", random=True, prefix_len=4),
        Token("perplexity", rb"-(?<=pplx-)[a-z0-9]{32,}", random=True, back=3, prefix_len=5, before=None),
    ],
    b"j": [
        Token("grafana", rb"rijoi(?<=eyjrijoi)[a-z0-9]{70,400}={0,3}", rb"eyJrIjoi[A-Za-z0-9]{70,400}={0,3}",
              back=2),
        Token("jwt", rb"(?<=eyj)[a-z0-9_-]{8,1024}\.eyj[a-z0-9_-]{8,8192}\.[a-z0-9_-]{10,}",
              rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}", before=None, back=2),
    ],
    b"y": [
        Token("google_oauth", rb"a29\.[a-z0-9_-]{20,}", random=True, prefix_len=5),
        Token("pypi", rb"pi-age(?<=pypi-age)[a-z0-9_-]{50,}", rb"pypi-AgE[A-Za-z0-9_-]{50,}", back=1, before=None),
        Token("tavily", rb"-(?<=tvly-)(?:dev-|prod-)?[a-z0-9]{20,}", random=True, back=3, prefix_len=5, before=None),
        Token("sentry", rb"s_(?<=sntrys_)[a-z0-9+/=_]{50,}", random=True, back=4, prefix_len=7, before=None),
        Token("sentry", rb"u_(?<=sntryu_)[a-f0-9]{64}(?![a-z0-9])", back=4, before=None),
    ],
    b"q": [
        Token("square", rb"0(?<=sq0)(?:atp|csp)-[a-z0-9_-]{22,}", random=True, back=1, prefix_len=7, before=None),
        Token("azure", rb"~(?<=[a-z0-9_~.]{3}[0-9]q~)[a-z0-9_~.-]{31,34}(?![a-z0-9_~.-])",
              rb"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}", before=None, back=4),
    ],
    b"c": [
        Assigned(rb"ret(?<=secret)" + NAME_END + SEP + VALUE),
        Token("notion", rb"ret_(?<=secret_)[a-z0-9]{43}(?![a-z0-9])", random=True, back=2, prefix_len=7),
        Assigned(rb"redentials?" + NAME_END + SEP + VALUE),
        Value("password", rb"url\b[^\r\n\x00;|&]{0,300}?[ \t](?:-u|--user)[ \t]*[\"']?[^\s:\"'\x00]{1,100}:"
              rb"(?P<value>" + BARE_VALUE + rb"{1,256})", before=WORD, specific=0),
    ],
    b"h": [
        Custom(rb"orization(?<=authorization)(?:\\{0,8}[\"'])?[ \t]*[:=][ \t]*(?:\\{0,8}[\"'])?"
               rb"(?P<scheme>(?:bearer|basic|token|bot|digest|apikey|sso-key|aws4-hmac-sha256)[ \t]+)?"
               rb"(?P<value>[a-z0-9._~+/=-]{1,256})", _authorization, ALNUM, 3),
        Assigned(rb"(?=[\\\"' \t:=])(?<=auth)" + NAME_END + SEP + VALUE),  # a class first: cheap at each h
        Token("huggingface", rb"f_[a-z0-9]{30,}", rb"hf_[A-Za-z0-9]{30,}"),
        Token("vault", rb"v[sbr]\.[a-z0-9_-]{24,}", rb"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
        Token("heroku", rb"rku-[a-z0-9_-]{50,}", rb"HRKU-[A-Za-z0-9_-]{50,}", before=None),
        Token("slack", rb"ooks\.slack\.com/(?:services|workflows|triggers)/[a-z0-9/_-]{20,}", before=None),
        Token("stripe", rb"sec_(?<=whsec_)[a-z0-9+/]{24,}", random=True, back=1, prefix_len=6, before=None),
        Token("linear", rb"_(?<=lin_oauth_)[a-f0-9]{64}(?![a-z0-9])", back=8, before=None),
    ],
    b"p": [
        Assigned(rb"ass(?:word|wd|phrase|wort)?" + NAME_END + SEP + VALUE),
        Value("password", rb"ass(?<=sshpass)[ \t]+-p[ \t]*" + QUOTED_OR_WORD, before=WORD, check=_lower_p,
              back=3),
        Assigned(rb"wd" + NAME_END + SEP + VALUE),
        Token("planetscale", rb"scale_(?:tkn|pw|oauth)_[a-z0-9_=-]{30,}", random=True, prefix_len=11, before=None),
        Token("pulumi", rb"ul-[a-f0-9]{40}(?![a-z0-9])"),
        Token("databricks", rb"i(?<=dapi)[a-f0-9]{32}(?:-[0-9]+)?(?![a-z0-9])", rb"dapi[a-f0-9]{32}(?:-[0-9]+)?",
              random=True, back=2),
        Token("supabase", rb"_(?<=sbp_)[a-f0-9]{40}(?![a-z0-9])", back=2),
        Token("npm", rb"m_(?<=npm_)[a-z0-9]{36}(?![a-z0-9])", rb"npm_[A-Za-z0-9]{36}", random=True, before=None,
              back=1, prefix_len=4),
        Token("digitalocean", rb"_v1_(?<=dop_v1_)[a-f0-9]{64}(?![a-z0-9])", back=2, before=None),
        *[Token("shopify", kind + rb"_(?<=shp" + kind + rb"_)[a-f0-9]{32}(?![a-z0-9])", before=None, back=2)
          for kind in (b"at", b"ca", b"pa", b"ss")],
        Token("linear", rb"i_(?<=lin_api_)[a-z0-9]{40}(?![a-z0-9])", rb"lin_api_[A-Za-z0-9]{40}", back=5, before=None),
        Token("doppler", rb"\.(?<=dp\.)(?:pt|st|sa|ct|scim|audit)\.[a-z0-9]{40,44}(?![a-z0-9])", back=1),
    ],
    b"m": [
        *[Custom(name + rb"[a-z-]*[ \t][^\r\n\x00;|&]{0,300}", _command_password, WORD) for name in (b"ysql", b"ariadb")],
        Value("password", rb"achine" + SPACE + rb"[^\s\x00]{1,200}" + SPACE + rb"login" + SPACE
              + rb"[^\s\x00]{1,200}" + SPACE + rb"password[ \t]+(?P<value>" + BARE_VALUE + rb"{1,256})"),
    ],
    b"--": [
        Custom(rb"---begin (?:[a-z0-9]+ ){0,4}private key(?: block)?-----(?P<begin>)"
               rb"(?:" + EOL + rb"|[ \t]+|>|[a-z][a-z-]{1,30}: [^\r\n\\\x00]{0,200}|[a-z0-9+/=]+){0,5000}"
               rb"(?P<end>-----end (?:[a-z0-9]+ ){0,4}private key(?: block)?-----)?", _private_key),
        Assigned(rb"(?:[a-z0-9]+[-_])*(?:pass(?:word|wd|phrase)?|token|secret|api[-_]?key|auth)(?P<e>)"
                 rb"[ \t]+" + VALUE, flag=True),
    ],
    b"_": [
        Token("replicate", rb"(?<=r8_)[a-z0-9]{37}(?![a-z0-9])", rb"r8_[A-Za-z0-9]{37}", random=True, back=2,
              prefix_len=3),
        Token("notion", rb"(?<=ntn_)[0-9]{11}[a-z0-9]{35}(?![a-z0-9])", rb"ntn_[0-9]{11}[A-Za-z0-9]{35}", back=3),
    ],
    b"%": [
        Value("url_password", rb"3a%2f%2f(?:[a-z0-9._~+!$'*-]|%(?!3a|2f|40)[0-9a-f]{2}){0,256}%3a"
              rb"(?P<value>(?:[a-z0-9._~+!$'*-]|%(?!2f|40)[0-9a-f]{2}){1,256})%40", specific=0),
    ],
    b":": [
        Value("url_password", rb"//[^\s:/@\"'\\<>\x00]{0,256}:(?P<value>[^\s@/\"'\\<>\x00]{1,256})@(?=[a-z0-9\[_])",
              specific=0),
        Custom(rb"aa[a-z0-9_-]{33}(?![a-z0-9_-])", _telegram),
    ],
}
# Passes over the original text, for prefixes of capitals (rare there).
CASED_PASSES: dict[bytes, list] = {
    b"A": [
        Token("google", rb"Iza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", before=None),
        Token("aws", rb"(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}(?![0-9A-Z])", before=None),  # `…KIA…b into`: ends at a small letter
        Token("age", rb"GE-SECRET-KEY-1[0-9A-Z]{58}(?![0-9A-Za-z])", before=None),
        Token("atlassian", rb"TATT3[A-Za-z0-9_=-]{100,}", before=None),
    ],
}
# Rules too costly to run over every text (their first character is a class), run only within
# NEAR characters of a word that goes with them: (word, kind, pattern on the original text).
NEAR = 512
NEAR_WORDS = [
    (b"discord", "discord", compiledre.compile(
        rb"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])")),
]


_OPEN_REPEAT = compiledre.compile(rb"\{([0-9]+),\}")


def _pass_pattern(anchor: bytes, rules: list) -> tuple[bytes, dict]:
    """One pattern for a pass (its source, and its rules by group name): the anchor, then each rule's alternative, which ends with an empty
    group named after the rule (a group around it would keep the engine from skipping an
    alternative at its first character). Alternatives that start with the same literal share it,
    so that the engine tries few at each anchor. The rule's own groups are renamed after it."""
    by_first: dict = {}
    by_group = {}
    for index, rule in enumerate(rules):
        group = f"r{index}"
        rest = re.sub(rb"\(\?P<(\w+)>", lambda m: b"(?P<" + group.encode() + b"_" + m.group(1) + b">", rule.rest)
        rest = re.sub(rb"\(\?\((\w+)\)", lambda m: b"(?(" + group.encode() + b"_" + m.group(1) + b")", rest)
        rest = _OPEN_REPEAT.sub(rb"{\1,%d}" % LONGEST, rest) + b"(?P<" + group.encode() + b">)"
        first = rest[:1] if rest[:1].isalnum() or rest[:1] in (b"-", b"_", b"~", b"/") else b""
        by_first.setdefault(first, []).append(rest[len(first):])
        by_group[group] = rule
    parts = [re.escape(first) + (b"(?:" + b"|".join(rests) + b")" if len(rests) > 1 else rests[0])
             if first else b"|".join(rests) for first, rests in by_first.items()]
    return re.escape(anchor) + b"(?:" + b"|".join(parts) + b")", by_group


def _all_passes() -> list:
    """[(cased, anchor, pattern, rules by group)] for every pass; the patterns compiled once
    and kept (core/compiledre.py: parsing them was most of this module's import)."""
    made = [(cased, anchor, *_pass_pattern(anchor, rules))
            for cased, passes in ((False, PASSES), (True, CASED_PASSES)) for anchor, rules in passes.items()]
    return [(cased, anchor, compiledre.compile(source), by_group) for cased, anchor, source, by_group in made]


ALL_PASSES = _all_passes()


# ---------------------------------------------------------------------------------------------
# Finding and replacing.

def found_spans(data: bytes, known: dict | None = None) -> list:
    """Every secret in `data` (UTF-8, NUL between strings) as its reader sees it (presented.py:
    line numbers, colours and escapes taken off), and every other mention of one of them or of
    `known` ({secret: kind}, found elsewhere in the session): non-overlapping spans of `data`."""
    shown, back = presented.view(data)
    spans = matched_spans(shown)
    secrets = {**(known or {}), **{shown[start:end]: kind for start, end, kind, _ in spans}}
    for start, end, kind, _ in spans:
        if kind == "private_key":  # its lines too: a tool may quote one alone (a path made of it)
            secrets.update((line, kind) for line in _KEY_BODY.findall(shown, start, end))
    if secrets:
        spans += mentions(shown, secrets)
    return back(resolved(spans, shown))


def matched_spans(data: bytes) -> list:
    """What the rules accept in `data`, as (start, end, kind, specific), overlaps left."""
    low = data.lower()
    spans = []
    for cased, anchor, pattern, by_group in ALL_PASSES:
        text = data if cased else low
        if anchor in text:  # a memchr for most anchors: a small text lacks many of them
            spans += pass_spans(text, data, low, pattern, by_group)
    for word, kind, pattern in NEAR_WORDS:
        spans += near_spans(data, low, word, kind, pattern)
    return spans


MENTIONED = 6  # a secret this long or longer is looked for everywhere else in its session


def mentions(data: bytes, secrets: dict) -> list:
    """Every mention in `data` of a secret of `secrets` that stands alone (no letter or digit
    glued to it): a password a rule found in a URL is a secret where a reply quotes it bare."""
    values = sorted((value for value in secrets if len(value) >= MENTIONED), key=len, reverse=True)
    if not values:
        return []
    pattern = re.compile(rb"(?<![A-Za-z0-9])(?:" + b"|".join(map(re.escape, values)) + rb")(?![A-Za-z0-9])")
    return [(found.start(), found.end(), secrets[found.group()], 0) for found in pattern.finditer(data)]


def near_spans(data: bytes, low: bytes, word: bytes, kind: str, pattern: re.Pattern) -> list:
    """Matches of `pattern` within NEAR characters of each mention of `word` (each character
    read once, however many mentions)."""
    spans, done = [], 0
    at = low.find(word)
    while at >= 0:
        start, end = max(done, at - NEAR), at + len(word) + NEAR
        spans += [(m.start(), m.end(), kind, 1) for m in pattern.finditer(data, start, end) if looks_random(m.group())]
        done = end
        at = low.find(word, end)
    return spans


def pass_spans(text: bytes, data: bytes, low: bytes, pattern: re.Pattern, by_group: dict) -> list:
    spans, pos = [], 0
    while (match := pattern.search(text, pos)) is not None:
        rule = by_group[match.lastgroup]
        if rule.before is not None and not starts_word(data, match.start() - rule.back, rule.before):
            pos = match.start() + 1
            continue
        accepted = rule.spans(data, match, match.lastgroup)
        spans += accepted
        pos = next_search(rule, match, accepted)
    return spans


def next_search(rule, match, accepted: list) -> int:
    """Where the pass goes on. Past a token, taken or not (nothing else starts inside a run it
    read: this keeps a run of fake prefixes linear); into a generic value that was taken, so that
    a token in it gets its own kind (past it when it was too long for a pattern to read); else at
    the next character."""
    if isinstance(rule, Token):
        return match.end()
    if not accepted:
        return match.start() + 1
    start, end, _, specific = accepted[0]
    return max(end, match.end()) if specific or end - start >= 256 else start


def resolved(spans: list, data: bytes) -> list:
    """Non-overlapping spans: the earliest first, then the specific one (its shape is exact, a
    generic value may run on), then the longest; each widened to whole UTF-8 characters."""
    kept = []
    for start, end, kind, _ in sorted(spans, key=lambda s: (s[0], -s[3], -s[1])):
        if kept and start < kept[-1][1]:
            continue
        while end < len(data) and data[end] & 0xC0 == 0x80:
            end += 1
        kept.append((start, end, kind))
    return kept


def _replaced(piece: bytes, spans: list, offset: int, counts: dict) -> str:
    out, pos = [], 0
    for start, end, kind in spans:
        start, end = start - offset, end - offset
        out.append(piece[pos:start].decode("utf-8", "surrogatepass"))
        out.append(marker(kind, piece[start:end]))
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    out.append(piece[pos:].decode("utf-8", "surrogatepass"))
    return "".join(out)


def redacted_strings(strings: list, data: bytes, is_ascii: bool, known: dict | None = None) -> tuple[dict, dict]:
    """{string: redacted string} for the strings joined in `data` that hold a secret (or a
    mention of one of `known`), and the count per kind."""
    spans = found_spans(data, known)
    if not spans:
        return {}, {}
    sizes = map(len, strings) if is_ascii else (len(s.encode("utf-8", "surrogatepass")) for s in strings)
    starts = [0, *itertools.accumulate(size + 1 for size in sizes)]
    by_string: dict = {}
    for span in spans:
        by_string.setdefault(bisect_right(starts, span[0]) - 1, []).append(span)
    counts: dict = {}
    out = {}
    for index, held in by_string.items():
        begin = starts[index]
        out[strings[index]] = _replaced(data[begin:starts[index + 1] - 1], held, begin, counts)
    return out, counts


def clean_among(texts: list) -> set:
    """Those of `texts` (strs) that `redact_text` would return unchanged, told by one search
    over all of them: for short texts (listing titles) a search per text costs five times as
    much, most of it each rule's start. The rules read strings joined by NUL as a document's
    are (a string's start is a line's), so each text read among others has every secret found
    that is found in it alone; and may have more (a secret of one text mentioned in another,
    a word near another text's token): those are left out, for `redact_text` to read alone.
    A text holding a NUL is never among them (it would be two strings here)."""
    unique = [text for text in dict.fromkeys(texts) if isinstance(text, str) and SEPARATOR not in text]
    if not unique:
        return set()
    joined = SEPARATOR.join(unique)
    data = joined.encode("utf-8", "surrogatepass")
    with markers_of("clean_among"):  # whatever markers a found secret makes here are dropped
        held, _ = redacted_strings(unique, data, len(data) == len(joined))
    return {text for text in unique if text not in held}


def redact_text(text: str) -> tuple[str, dict]:
    """The text with every secret replaced by its marker, and the count per kind; when clean,
    the very same str and {}. A UUID alone (a session's id: discovery asks this of every one)
    is clean without a search: no rule takes one without a name or a prefix before it."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) == 36 and _UUID.fullmatch(data):
        return text, {}
    out, counts = redacted_strings([text], data, len(data) == len(text))
    return (out[text], counts) if out else (text, {})


# ---------------------------------------------------------------------------------------------
# Trees.

def clean_tree(value, redact: bool = True) -> tuple[object, dict]:
    """A JSON-like tree with every string (dict keys too) redacted when `redact`, and valid
    Unicode always (a lone surrogate, from a file name that is not UTF-8, becomes U+FFFD, which
    orjson can serialize). The input itself when nothing changed, else a new tree; the input is
    never mutated. A tree nested too deeply to walk is first cut as serializing would cut it.
    Each distinct string is looked at once: documents repeat many (keys, reminders, re-read
    files)."""
    try:
        return _cleaned(value, redact)
    except RecursionError:
        return _cleaned(limit_depth(value, MAX_DEPTH), redact)


def _cleaned(value, redact: bool) -> tuple[object, dict]:
    strings = list(_strings(value))
    joined = SEPARATOR.join(strings)
    try:
        data = joined.encode("utf-8")
        changed = {}
    except UnicodeEncodeError:
        changed = {s: valid_unicode(s) for s in strings if not _encodes(s)}
        strings = list(dict.fromkeys(changed.get(s, s) for s in strings))
        joined = SEPARATOR.join(strings)
        data = joined.encode("utf-8")
    counts = {}
    if redact:
        in_context = {} if isinstance(value, str) else _found_in_context(value)
        known = {secret: kind for spans in in_context.values() for secret, kind in spans}
        redacted, counts = redacted_strings(strings, data, len(data) == len(joined), known)
        for old, new in changed.items():  # a repaired string that also held a secret
            changed[old] = redacted.pop(new, new)
        changed.update(redacted)
        _redact_in_context(in_context, changed, counts)
    if not changed:
        return value, counts
    return (changed.get(value, value) if isinstance(value, str) else _rebuilt(value, changed)), counts


CONTEXT_LIMIT = 4096  # an argument vector's strings, each, at most: longer ones are text, not arguments


def _found_in_context(value) -> dict:
    """Secrets that only their place in the tree shows: the string value of a secret-named key
    (`{"password": "..."}`, an `env` object's `API_KEY`, a `headers` object's `Authorization`),
    read as the JSON text `"key": "value"`; and an argument of a command recorded as a vector
    of strings (`["sshpass", "-p", "..."]`), read as the command line they make. {string of
    the tree: [(secret in it, kind)]}."""
    found: dict = {}
    for segments in _contexts(value):
        texts = [text for text, _ in segments]
        data = "".join(texts).encode("utf-8", "surrogatepass")
        spans = found_spans(data)
        offset = 0
        for text, real in segments:
            size = len(text.encode("utf-8", "surrogatepass"))
            inside = [(data[max(a, offset):min(b, offset + size)], kind) for a, b, kind in spans
                      if a < offset + size and b > offset]
            if real and inside:
                found.setdefault(text, []).extend(inside)
            offset += size
    return found


def _redact_in_context(found: dict, changed: dict, counts: dict) -> None:
    """The secrets `_found_in_context` found replaced in the strings that hold them, where the
    pass over every string (which looked for their mentions everywhere) left one as it was
    (every occurrence of that string: it is a secret wherever it appears)."""
    for text, secrets in found.items():
        if text in changed:
            continue
        data = text.encode("utf-8", "surrogatepass")
        spans = [(m.start(), m.end(), kind, 0) for secret, kind in secrets for m in re.finditer(re.escape(secret), data)]
        if spans:
            changed[text] = _replaced(data, resolved(spans, data), 0, counts)


def _contexts(value):
    """The places `_redact_in_context` reads: (text, whether it is a string of the tree)
    segments, walked without recursion."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, str) and isinstance(key, str) and item and _names_secret(key):
                    yield [(f'"{key}": "', False), (item, True), ('"', False)]
                elif isinstance(item, (dict, list, tuple)):
                    pending.append(item)
        elif isinstance(node, (list, tuple)):
            if (len(node) > 1 and all(isinstance(item, str) and len(item) <= CONTEXT_LIMIT for item in node)):
                segments = []
                for item in node:
                    segments += [(item, True), (" ", False)]
                yield segments[:-1]
            else:
                pending.extend(item for item in node if isinstance(item, (dict, list, tuple)))


@functools.lru_cache(maxsize=4096)  # a document repeats a few dozen keys thousands of times
def _names_secret(key: str) -> bool:
    return len(key) <= 128 and (kind_of_name(key.encode("utf-8", "surrogatepass")) is not None
                                or "authorization" in key.lower())


def valid_unicode(text: str) -> str:
    """Lone surrogates replaced by U+FFFD (a pair becomes the character it encodes)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strings(value) -> dict:
    """Every distinct string of the tree, dict keys included, as the keys of a dict."""
    out: dict = {}
    if isinstance(value, str):
        out[value] = None
    elif isinstance(value, (dict, list, tuple)):
        _collect(value, out)
    return out


_SCALARS = frozenset((int, float, bool, type(None)))


def _collect(value, out: dict) -> None:
    """The strings under a container into `out`; exact types first (most of a document), any
    subclass or tuple after."""
    if type(value) is dict or (type(value) is not list and isinstance(value, dict)):
        for key in value:
            if type(key) is str or isinstance(key, str):
                out[key] = None
        value = value.values()
    for item in value:
        kind = type(item)
        if kind is str:
            out[item] = None
        elif kind is dict or kind is list:
            _collect(item, out)
        elif kind not in _SCALARS:
            if isinstance(item, str):
                out[item] = None
            elif isinstance(item, (dict, list, tuple)):
                _collect(item, out)


def _rebuilt(value, changed: dict):
    """The container again with the changed strings put in, or itself when it holds none; one
    frame per level, as `_collect`, so that whatever could be walked can be rebuilt."""
    is_dict = isinstance(value, dict)
    pairs = value.items() if is_dict else enumerate(value)
    out, same = ({} if is_dict else []), True
    for key, item in pairs:
        if is_dict and isinstance(key, str):
            new_key = changed.get(key, key)
        else:
            new_key = key
        if isinstance(item, str):
            new_item = changed.get(item, item)
        elif isinstance(item, (dict, list, tuple)):
            new_item = _rebuilt(item, changed)
        else:
            new_item = item
        same = same and new_key is key and new_item is item
        if is_dict:
            out[new_key] = new_item
        else:
            out.append(new_item)
    if same:
        return value
    return out if is_dict or isinstance(value, list) else tuple(out)
