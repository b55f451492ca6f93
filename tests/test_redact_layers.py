"""Redaction of text as its reader sees it (issue 29): a key read through a tool that numbers
its lines, a token in terminal colours, a secret-named assignment in the middle of a line, a
token glued to the word before it, a secret quoted bare elsewhere in its session, and the
redaction rules' version that names the caches. Each test here fails on the rules before
presented.py; the benign corpus of test_redact.py stays untouched."""

from __future__ import annotations

import json
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redaction import presented
from redaction import redact as redact_module
from redaction.redact import clean_tree, marker, redact_text


def rand(n: int, alphabet: str = string.ascii_letters + string.digits, seed: object = 0) -> str:
    rng = random.Random(f"layers/{seed}/{n}")
    return "".join(rng.choice(alphabet) for _ in range(n))


BASE64 = string.ascii_letters + string.digits + "+/"
KEY_LINES = [rand(64, BASE64, i) for i in range(4)] + [rand(24, BASE64, 9) + "=="]


def key_block(label: str, end: bool) -> list[str]:
    return [f"-----BEGIN {label}-----", *KEY_LINES, *([f"-----END {label}-----"] if end else [])]


# How tools print a file's lines: (name, lines -> text).
GUTTERS = {
    "cat -n": lambda lines: "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines, 31)),
    "nl": lambda lines: "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines, 1)),
    "Read": lambda lines: "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, 1)),
    "grep -n": lambda lines: "\n".join(f"{n}:{line}" for n, line in enumerate(lines, 120)),
    "grep -rn": lambda lines: "\n".join(f"deploy/keys/id.pem:{n}:{line}" for n, line in enumerate(lines, 1)),
    "grep -n -A": lambda lines: "\n".join(f"{n}{':' if n == 1 else '-'}{line}" for n, line in enumerate(lines, 1)),
    "a quote": lambda lines: "\n".join(f"> {line}" for line in lines),
    "less -N, vim's numbers": lambda lines: "\n".join(f"{n:>4} {line}" for n, line in enumerate(lines, 1)),
    "a diff": lambda lines: "\n".join(f"+{line}" for line in lines),
    "editor": lambda lines: "\n".join(f"{n:4} | {line}" for n, line in enumerate(lines, 1)),
    "bat": lambda lines: "\n".join(f"{n:4} │ {line}" for n, line in enumerate(lines, 1)),
    "indented YAML": lambda lines: "tls:\n  key: |\n" + "\n".join(f"    {line}" for line in lines),
    "cat -n of indented YAML": lambda lines: "\n".join(f"{n:6d}\t    {line}" for n, line in enumerate(lines, 7)),
}
DRESSES = {
    "as printed": lambda text: text,
    "in JSON a tool printed": lambda text: json.dumps({"output": text})[1:-1],
    "in JSON in JSON": lambda text: json.dumps(json.dumps({"output": text})),
}
LABELS = ["RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY",
          "PGP PRIVATE KEY BLOCK"]


@pytest.mark.parametrize("end", [True, False], ids=["with END", "cut before END"])
@pytest.mark.parametrize("dress", DRESSES)
@pytest.mark.parametrize("gutter", GUTTERS)
@pytest.mark.parametrize("label", LABELS)
def test_a_private_key_read_through_a_numbering_tool_loses_its_whole_body(label, gutter, dress, end):
    text = DRESSES[dress](GUTTERS[gutter](key_block(label, end)) + "\nthe deploy continues")
    out, counts = redact_text(text)
    assert counts == {"private_key": 1}
    assert [line[:16] for line in KEY_LINES if line[:16] in out] == []
    assert "the deploy continues" in out and "-----BEGIN" not in out


@pytest.mark.parametrize("gutter", ["cat -n", "Read", "grep -n"])
def test_a_service_account_files_private_key_read_through_a_numbering_tool(gutter):
    pem = "\n".join(key_block("PRIVATE KEY", True)) + "\n"
    account = json.dumps({"type": "service_account", "project_id": "demo-project", "private_key": pem,
                          "client_email": "deploy@demo-project.iam.gserviceaccount.com"}, indent=2)
    for text in (GUTTERS[gutter](account.split("\n")), json.dumps(GUTTERS[gutter](account.split("\n")))):
        out, counts = redact_text(text)
        assert counts == {"private_key": 1}, out
        assert not any(line[:16] in out for line in KEY_LINES)
        assert "deploy@demo-project.iam.gserviceaccount.com" in out


GITHUB = "ghp_" + rand(36, seed="github")
OPENAI = "sk-proj-" + rand(48, seed="openai")
SLACK = "xoxb-1361585478-694679896769-" + rand(24, seed="slack")
# How a terminal's codes dress a token: {0} its first four characters, {1} the rest.
COLOURS = {
    "raw": "\x1b[32m{0}{1}\x1b[0m",
    "bold and colour": "\x1b[1m\x1b[38;5;208m{0}{1}\x1b[0m\x1b[K",
    "a link (OSC 8)": "\x1b]8;;https://example.com\x1b\\{0}{1}\x1b]8;;\x1b\\",
    "split by a colour": "{0}\x1b[1m{1}\x1b[0m",
    "as a shell writes it": "echo -e '\\033[32m{0}{1}\\033[0m'",
    "as Python writes it": "print('\\x1b[32m{0}{1}\\x1b[0m')",
}


@pytest.mark.parametrize("colour", COLOURS)
@pytest.mark.parametrize("kind,secret", [("github", GITHUB), ("openai", OPENAI), ("slack", SLACK)])
def test_a_token_in_terminal_colours_is_caught_raw_and_json_escaped(kind, secret, colour):
    line = f"export TOKEN_VALUE: {COLOURS[colour].format(secret[:4], secret[4:])} done"
    for text in (line, json.dumps(line)[1:-1], json.dumps(json.dumps(line))):
        out, counts = redact_text(text)
        assert counts == {kind: 1}, out
        assert secret[-12:] not in out and "done" in out


def test_a_colour_code_around_a_secrets_name_hides_nothing():
    value = rand(18, seed="colour-pw")
    out, counts = redact_text(f"\x1b[1mDB_PASSWORD\x1b[0m: {value}")
    assert counts == {"password": 1} and value not in out


PASSWORD = "y8p0aOW9mkOhzHr"  # camelCase to a careless eye: the rules before took it for a variable
AWS = "AKIA" + rand(16, string.ascii_uppercase + string.digits, "aws")


@pytest.mark.parametrize("text,secret,kind", [
    # a secret-named assignment in the middle of a line
    (f"host=db; password: {PASSWORD} ; port=5432", PASSWORD, "password"),
    (f"user=app; DB_PASSWORD: {PASSWORD} ; timeout=3", PASSWORD, "password"),
    (f"x=1, db_password={PASSWORD}, y=2", PASSWORD, "password"),
    (f"tool login --password {PASSWORD} --verbose", PASSWORD, "password"),
    (f'config {{"user": "app", "password": "{PASSWORD}", "port": 5}}', PASSWORD, "password"),
    ("env: A=1; API_TOKEN=e7fbbd5273656f0f1ad35a; B=2", "e7fbbd5273656f0f1ad35a", "assignment"),
    ("flags --client-secret S3cure_Pa55wordX9 --x", "S3cure_Pa55wordX9", "assignment"),
    ("a=1; password: Sunshine ; b=2", "Sunshine", "password"),
    # a token glued to the word before it
    (f"DEPLOY_KEY_{AWS}", AWS, "aws"),
    (f"KEYID{AWS} next", AWS, "aws"),
    (f"echo MY{GITHUB}", GITHUB, "github"),
    (f"value x{OPENAI}", OPENAI, "openai"),
    (f"A{SLACK} more", SLACK, "slack"),
    ("pre_glpat-" + rand(20, seed="gl"), "glpat-" + rand(20, seed="gl"), "gitlab"),
    ("KEY" + "sk-" + rand(48, seed="plain-sk"), "sk-" + rand(48, seed="plain-sk"), "openai"),
    ("mynpm_" + rand(36, seed="npm"), "npm_" + rand(36, seed="npm"), "npm"),
])
def test_a_mid_line_assignment_or_a_glued_token_is_replaced_and_nothing_else(text, secret, kind):
    assert redact_text(text) == (text.replace(secret, marker(kind, secret)), {kind: 1})


def test_every_assignment_of_a_line_is_caught():
    out, counts = redact_text("a=1; password: Sunshine ; DB_PASSWORD: Moonlight ; b=2")
    assert "Sunshine" not in out and "Moonlight" not in out and counts == {"password": 2}


@pytest.mark.parametrize("text", ["password = user_password", "password: userPassword", "pwd = dbPass2",
                                  "password=self.password", "passwd: getPass()", "password: Buffer;",
                                  "pwd: expected bytes, got str", "2024-01-15 12:30 deploy"])
def test_a_variable_made_of_words_is_still_no_password(text):
    assert redact_text(text) == (text, {})


@pytest.mark.parametrize("text", ["task-" + rand(24, string.ascii_lowercase + string.digits, "task"),
                                  "desk_test_" + rand(20, seed="desk"), "MASK-" + rand(24, seed="mask")])
def test_a_lower_case_prefix_inside_a_word_is_no_token(text):
    assert redact_text(text) == (text, {})


def test_a_secret_found_once_is_redacted_at_every_mention_in_its_session():
    password = "Zp9xQ2mW7vLk"
    doc = {"steps": [
        {"source": "user", "message": f"connect to mongodb+srv://app:{password}@c0.example.net/db"},
        {"source": "agent", "message": f"I used the password {password} as you said."},
        {"source": "agent", "tool_calls": [{"arguments": {"env": {"DB_PASSWORD": "Qm4vT8wXz1"}}}],
         "observation": f"login with Qm4vT8wXz1 ok; {password}."},
    ]}
    out, counts = clean_tree(doc)
    text = json.dumps(out, ensure_ascii=False)
    assert password not in text and "Qm4vT8wXz1" not in text
    assert counts == {"url_password": 3, "password": 2}
    assert text.count(marker("url_password", password)) == 3


def test_a_mention_is_a_whole_word_and_a_short_secret_is_not_looked_for_elsewhere():
    doc = {"a": "password: Zp9xQ2mW7vLk", "b": "Zp9xQ2mW7vLkExtra and xZp9xQ2mW7vLk", "c": "mysql -pab12 db", "d": "ab12 cd"}
    out, _ = clean_tree(doc)
    assert out["b"] == doc["b"] and out["d"] == doc["d"]


# presented.view: the map back ------------------------------------------------------------------------
# layer -> what the reader sees of it
LAYERS = {"\x1b[31m": "", "\x1b[0m": "", "\\u001b[1m": "", "\\n": "\n", "\\\\\\n": "\n", '\\"': '"',
          "\n   12\t": "\n", "\n7:": "\n", "\n  3→": "\n", "\n 4 | ": "\n"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(string.ascii_letters + " ", min_size=1, max_size=12), st.sampled_from(sorted(LAYERS))),
                max_size=12))
def test_view_takes_the_layers_off_and_maps_every_span_back(pieces):
    data, expected, places = b"", b"", []
    for text, layer in pieces:
        places.append((len(expected), len(expected) + len(text), len(data), len(data) + len(text)))
        data += (text + layer).encode()
        expected += (text + LAYERS[layer]).encode()
    shown, back = presented.view(data)
    assert shown == expected
    assert back([place[:2] for place in places]) == [place[2:] for place in places]
    if places:  # a span over several pieces covers what lies between them in the original
        assert back([(places[0][0], places[-1][1])]) == [(places[0][2], places[-1][3])]


def test_text_without_layers_is_the_same_object():
    data = b"plain text, 12 lines: nothing to take off"
    assert presented.view(data)[0] is data


def test_a_telegram_bot_token_at_a_lines_start_is_no_gutter():
    token = "123456789:AA" + rand(33, string.ascii_letters + string.digits + "_-", "tg")
    out, counts = redact_text(f"bot:\n{token}")
    assert counts == {"telegram": 1} and token[-12:] not in out


# issue 37: what still left in `export` and the document cache ------------------------------------------
def test_an_aws_key_id_glued_to_letters_on_both_sides():
    """`KEY_AKIA` + 16 + a small letter, as a shell line carries it (the issue's X are its body)."""
    key_id = "AKIA" + rand(16, string.ascii_uppercase + "234567", "aws-glued")
    out, counts = redact_text(f"cp notes.txt /tmp ; KEY_{key_id}b into note.txt")
    assert counts == {"aws": 1} and key_id[4:] not in out
    assert out.endswith("b into note.txt") and "KEY_«REDACTED:aws:" in out


@pytest.mark.parametrize("line", [
    "host=db ; DB_PASSWORD: ia8bmmCTJbz2 ; port=5432",  # the line
    "host=db ; DB_PASSWORD:ia8bmmCTJbz2 ; port=5432",
    "host=db ; db_password=ia8bmmCTJbz2 ; port=5432",
    "host=db ; Smtp_Password: ia8bmmCTJbz2 ; port=5432",
    "host=db ; JWT_SECRET: ia8bmmCTJbz2 ; port=5432",
    "host=db ; webhook_secret=ia8bmmCTJbz2 ; port=5432",
    "host=db ; SLACK_BOT_TOKEN: ia8bmmCTJbz2 ; port=5432",
    "host=db ; refresh_token:ia8bmmCTJbz2 ; port=5432",
    "host=db ; STRIPE_KEY=ia8bmmCTJbz2 ; port=5432",
    "host=db ; stripe_key: ia8bmmCTJbz2 ; port=5432",
    "host=db ; Signing_Key: TGEsd0VYLklf3 ; port=5432",
])
def test_a_secret_named_value_mid_line_that_reads_as_words_run_together(line):
    """Random letters and digits that `_WORDY` reads as camelCase words (`ia8bmm`+`CT`+`Jbz2`)
    after a name ending in `_PASSWORD`, `_SECRET`, `_TOKEN` or `_KEY`, in any case, with `:` or
    `=`."""
    value = line.split(" ; ")[1].replace(":", "=").split("=")[1].strip()
    out, counts = redact_text(line)
    assert value not in out and sum(counts.values()) == 1, out
    assert out.startswith("host=db ; ") and out.endswith(" ; port=5432")


@pytest.mark.parametrize("line", ["password: userPassword", "token = accessToken", "DB_PASSWORD=dbPassword2",
                                  "password:str", "api_key: XMLHttpRequest", "SECRET_KEY=Socks5Auth",
                                  "stripe_key: base64Encoded", "sort_key: a8f3k2j9d0s1"])
def test_names_and_words_stay(line):
    assert redact_text(line) == (line, {})


# the rules' version -------------------------------------------------------------------------------------
# version.RULES -> digests of the rules (redact.py and presented.py, import lines left out: a
# move between packages changes nothing). A change of the rules changes the digest: raise
# RULES if what they find changed (caches of the older rules are then removed), else record
# the new digest under the same version.
RULES_DIGESTS = {2: {"151d29174a8a5b09eba0b43d153cc210a118fc8997302ccf8d7b6772cb8038ef",
                    "2e6cfc33e1da00eb36a6a85f9650584e6040602ff5ceb768c878254145b55bb4"},  # + clean_among: finds the same
                3: {"d21cc6f9fc9c4027befe6cd7552dc3ab12204e772aaacd3dc65e8e77dd1c29c0"}}  # issue 37: AWS ids before a small letter, words run together, `NAME:value`


def rules_digest() -> str:
    import hashlib

    digest = hashlib.sha256()
    for module in (redact_module, presented):
        with open(module.__file__, encoding="utf-8") as handle:
            digest.update("".join(line for line in handle if not line.startswith(("import ", "from "))).encode())
    return digest.hexdigest()


def test_the_caches_rules_version_names_these_rules():
    from core.version import RULES

    assert rules_digest() in RULES_DIGESTS.get(RULES, ()), (
        f"the redaction rules changed ({rules_digest()}): raise version.RULES if what they find "
        "changed, and record the digest in RULES_DIGESTS")
