"""The red team: secrets of every kind planted into every agent's store, in every field that
holds text, and looked for in every channel trajectoriz prints or stores. None may come out;
ordinary text that looks like a secret to a careless rule must come out intact.

Planting (`plant_store`): every JSON string that holds prose (a space or a line break: messages,
reasoning, tool arguments and outputs, file contents, titles) gets the payload appended, JSON
held inside a string (tool arguments recorded as a JSON string) is planted inside and
re-encoded, SQLite text and blob values that hold JSON are planted the same way, other text
files get the payload after every mention of the agent's anchor. The payload holds each secret
plain, on a later line of a multi-line text, after a tab, quoted, in YAML and shell forms, and
inside JSON text as a tool prints it (`\\"KEY\\": \\"...\\"`, `\\n` as two characters).

Channels: list (table, --json), search (titles, --json, --regex probes, --content in every
mode), show (JSON, --markdown, every session), export, stats, agents (table, --json), the mount
(cat and grep -r), and every file of the cache folder. `--no-redact` proves each secret was
planted where the documents read it.
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from helpers import run_main
from homes import agent_homes

# kind -> (the text it is recorded in, with {} for the secret; the secret; other pieces that must not come out)
SECRETS = {
    'anthropic': ('key: {}', 'sk-ant-api03-j59pjomke57foiu94c0D1lNQgtYk3IMJ9PvMJ11U-qz6DNLLgGxJCbUUrt93lAA', []),
    'openai': ('OPENAI={}', 'sk-proj-4BczNvltFhjG9yO7uRQz3lnGl4QrPz3A2o40ILiI6s6Dcouh', []),
    'github': ('git push https://{}@github.com/o/r', 'ghp_N1fHW93RYY7TKuHmvguTEKhCpqHKCn8TSCpq', []),
    'github_pat': ('{}', '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', []),
    'gitlab': ('token={}', 'glpat-Y4YcqbHsVtwyjq1QqFd0', []),
    'slack': ('{}', 'xoxb-1361585478-694679896769-iea6hGawFQRrIhHl50I4AD5v', []),
    'slack_app': ('{}', 'xapp-1-A0YPXLIHHG8-9579677883842-abbb01b5635d426997c2595e9122116a44b78c08854a846842674c980fca8dee', []),
    'stripe': ('\n\t{}', 'sk_live_51GMWTGdB3zzDOrjRdFiM9ul4OW0x33P', []),
    'google': ('{}', 'AIzalJ51GGvVBhz9ElhmVb8xvS6Yt4f0IBZMCCG', []),
    'aws_key': ('aws_access_key_id = {}', 'AKIANILII5SMMJUGPD2L', []),
    'aws_key_after_name': ('DEPLOY_KEY_{}', 'AKIAAIR3P1Q5I5KH4BXA', []),
    'aws_secret': ('[default]\naws_secret_access_key = {}', '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', []),
    'npm': ('//registry.npmjs.org/:_authToken={}', 'npm_3vNL1g4sOXVipOyPZ7coJL2t69rqTIQ5Lde5', []),
    'huggingface': ('{}', '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', []),
    'bearer': ('curl -H "Authorization: Bearer {}" https://api.example.com', '2HyFQFjUWiy77hnsqDUgECXNVGxLs7iUpM', []),
    'basic_auth': ('Authorization: Basic {}', '7DPJYaW0NEvlQEtwhD7f20hnZ3Vuh8gS', []),
    'yaml_password': ('database:\n  password: {}', 'Correct-Horse-alvPGC9Ksk', []),
    'api_key_lower': ('api_key={}', 'yVB4P2FGFiWP4Fxy30QyUEC2', []),
    'json_api_key': ('{{"api_key": "{}"}}', 'pr4NAwGaAPYUAtef5KCrmhNZ', []),
    'escaped_json_key': ('{{\\"API_KEY\\": \\"{}\\"}}', 'HvXNbPp0ZReJwRQ5EzzJn9Qz', []),
    'env_token_later_line': ('A=1\nMY_API_TOKEN={}', 'e7fbbd5273656f0f1ad35a', []),
    'env_password_later_line': ('HOST=db\nDB_PASSWORD={}', '8p0aOW9mkOhzHr', []),
    'escaped_newline_token': ('A=1\\nSERVICE_TOKEN={}', '3ef7a3eb051cd058a654d812', []),
    'mysql': ('mysql -u root -p{} app', 'wdGdGgRHKcPzQx1', []),
    'url_password': ('postgres://admin:{}@db.internal:5432/app', '2FWQ5vRB24d', []),
    'url_encoded': ('redirect=https%3A%2F%2Fadmin%3A{}%40db.internal%2Fapp', 'T6UtX3K7ltvlGh', []),
    'jwt': ('{}', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MTcwMDAwMDAwMH0.koAZCYNRq8iXIML2i6em8AWY', []),
    'private_key': ('-----BEGIN RSA PRIVATE KEY-----\n{}\nQzH8M2PossJjlTmxthHeXpD1oYWchmt98tBqsVi3CXFl\n-----END RSA PRIVATE KEY-----', 'MIIEowIBAAKCAQEADnOE1cyZySrKdCJj2c9eNsEkn8DhiQ7ch9Ad99y9sZgMi2cB', ['QzH8M2PossJjlTmxthHeXpD1oYWchmt98tBqsVi3CXFl']),
    'private_key_no_end': ('-----BEGIN OPENSSH PRIVATE KEY-----\n{}\nAAAAC3NzaC1lZDI1NTE5AAAAInb5SbZijXQTDAoQNCvMK\n', 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABJmcP9kocYWL3', ['AAAAC3NzaC1lZDI1NTE5AAAAInb5SbZijXQTDAoQNCvMK']),
    'pgp_private_key': ('-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{}\n=HFb5\n-----END PGP PRIVATE KEY BLOCK-----', 'lQOYBGVxq7wBCADyvgcPzlf718balidF5yvSijnYPIxzwUp2m2ea3AE', []),
}

BENIGN = [
    "risk-assessment-for-production-systems.md",
    "task-runner-configuration-file-v2",
    'SORT_KEY = "created_at"',
    "CACHE_KEY=user_profile_cache",
    "PUBLIC_KEY=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx7Tm2Wp9Rz4Lk8Vc3Nb6Kd1Hs5Jf0Ga2UeRyTq8W user@host",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "request 550e8400-e29b-41d4-a716-446655440000",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "max_tokens=4096 and sort_key=lambda and PASSWORD=$DB_PASSWORD and API_KEY=<your key>",
    "token = os.environ[\"GH_TOKEN\"]",
    "see https://example.com:8080/path@v2 and the task-oriented design",
]
MARK = "PLANTED-BY-THE-RED-TEAM"
PAYLOAD = "\n".join([MARK, *(form.format(secret) for form, secret, _ in SECRETS.values()), *BENIGN, MARK])


def cores() -> dict:
    """kind -> what must not come out: the secret, its last 12 characters (a rule that replaced
    only a prefix would leave them), and the other lines of a key."""
    return {kind: (secret, secret[-12:], *more) for kind, (_, secret, more) in SECRETS.items()}


def leaks(data: bytes) -> list[str]:
    found = []
    for kind, pieces in cores().items():
        found += [f"{kind}: {piece}" for piece in pieces if piece.encode() in data]
        escaped = json.dumps(pieces[0])[1:-1].encode()
        if escaped != pieces[0].encode() and escaped in data:
            found.append(f"{kind}: {pieces[0]} (JSON-escaped)")
    return found


# planting -----------------------------------------------------------------------------------------
def is_prose(text: str) -> bool:
    return len(text) >= 8 and (" " in text or "\n" in text)


def plant_tree(value, payload: str = PAYLOAD):
    """Every prose string of a JSON value with the payload appended; JSON held in a string
    planted inside and encoded again."""
    if isinstance(value, dict):
        return {key: plant_tree(item, payload) for key, item in value.items()}
    if isinstance(value, list):
        return [plant_tree(item, payload) for item in value]
    if isinstance(value, str):
        inner = as_json(value)
        if inner is not None:
            return json.dumps(plant_tree(inner, payload))
        return value + "\n" + payload if is_prose(value) else value
    return value


def as_json(text: str):
    if text[:1] not in ("{", "[") or len(text) < 2:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, (dict, list)) else None


def plant_jsonl(data: str, payload: str = PAYLOAD) -> str:
    lines = []
    for line in data.split("\n"):
        parsed = as_json(line.strip()) if line.strip() else None
        lines.append(json.dumps(plant_tree(parsed, payload)) if parsed is not None else line)
    return "\n".join(lines)


def plant_sqlite(path: str, payload: str = PAYLOAD) -> int:
    connection = sqlite3.connect(path)
    planted = 0
    tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
              if not r[0].startswith("sqlite_")]
    for table in tables:
        for column in [c[1] for c in connection.execute(f'PRAGMA table_info("{table}")')]:
            values = [r[0] for r in connection.execute(f'SELECT DISTINCT "{column}" FROM "{table}"')]
            for value in values:  # by value: a WITHOUT ROWID table has no rowid to name a row by
                planted_value = plant_value(value, payload)
                if planted_value is not None:
                    connection.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE "{column}" = ?', (planted_value, value))
                    planted += 1
    connection.commit()
    connection.close()
    return planted


def plant_value(value, payload: str = PAYLOAD):
    """A SQLite value with the payload planted, of the same storage class; None to leave it."""
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
        inner = as_json(text)
        return json.dumps(plant_tree(inner, payload)).encode() if inner is not None else None
    if isinstance(value, str):
        inner = as_json(value)
        if inner is not None:
            return json.dumps(plant_tree(inner, payload))
        return value + "\n" + payload if is_prose(value) else None
    return None


def plant_store(root: str, anchor: str, payload: str = PAYLOAD) -> int:
    """Plant the payload into every store file under `root`; the number of files changed."""
    changed = 0
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if name.endswith(("-wal", "-shm", ".lock")) or os.path.islink(path):
                continue
            changed += plant_file(path, anchor, payload)
    return changed


def plant_file(path: str, anchor: str, payload: str = PAYLOAD) -> int:
    with open(path, "rb") as handle:
        data = handle.read()
    if data.startswith(b"SQLite format 3\x00"):
        return 1 if plant_sqlite(path, payload) else 0
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return 0
    whole = as_json(text.strip())
    if whole is not None:
        planted = json.dumps(plant_tree(whole, payload), indent=1)
    elif path.endswith(".jsonl"):
        planted = plant_jsonl(text, payload)
    elif anchor in text:
        planted = text.replace(anchor, anchor + "\n" + payload + "\n")
    else:
        return 0
    if planted == text:
        return 0
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(planted)
    return 1


# the channels -------------------------------------------------------------------------------------
def channels(env, cwd: str, ids: list[str], tmp_path) -> dict:
    """Every output trajectoriz gives of the store: name -> bytes."""
    outputs = {}

    def run(*args, ok=(0,)):
        result = run_main(env, list(args), cwd=cwd)
        assert result.returncode in ok, (args, result.stderr)
        outputs[" ".join(args)] = result.stdout + result.stderr

    for args in (["list"], ["list", "--all"], ["list", "--all", "--json"], ["search", MARK], ["search", "--json", "SCENARIO"],
                 ["stats"], ["stats", "--json"], ["agents"], ["agents", "--json"]):
        run(*args, ok=(0, 1))
    for mode in ([], ["--json"], ["--regex"]):
        run("search", "--content", "--limit", "0", *mode, MARK)
    for session_id in ids:
        run("show", session_id)
        run("show", "--markdown", "--max-chars", "0", session_id)
    run("export", "--all", "--out", str(tmp_path / "export"))
    outputs["export files"] = b"".join(p.read_bytes() for p in (tmp_path / "export").rglob("*") if p.is_file())
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    for folder, _, names in os.walk(cache):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                outputs[f"cache {os.path.relpath(os.path.join(folder, name), cache)}"] = handle.read()
    return outputs


@pytest.mark.parametrize("home", agent_homes(), ids=lambda h: h.agent)
def test_no_planted_secret_comes_out_of_any_channel(home, tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    env = home.build(root)
    assert plant_store(str(root), home.anchor), "nothing was planted"
    cwd = env.get("PWD", str(tmp_path))
    listed = run_main(env, ["list", "--all", "--json"], cwd=cwd)
    ids = [json.loads(line)["id"] for line in listed.stdout.splitlines()]
    assert ids, listed.stderr

    raw = run_main(env, ["export", "--all", "--no-redact", "--out", str(tmp_path / "raw")], cwd=cwd)
    assert raw.returncode == 0, raw.stderr
    unredacted = b"".join(p.read_bytes() for p in (tmp_path / "raw").glob("*.atif.json"))
    assert MARK.encode() in unredacted, "the payload is in no document"
    missing = [kind for kind, (_, secret, _) in SECRETS.items() if secret.encode() not in unredacted
               and json.dumps(secret)[1:-1].encode() not in unredacted]
    assert not missing, f"planted, yet in no document even with --no-redact: {missing}"

    outputs = channels(env, cwd, ids, tmp_path)
    found = {name: leaks(data) for name, data in outputs.items()}
    assert not {name: kinds for name, kinds in found.items() if kinds}
    exported = [json.loads(p.read_bytes()) for p in (tmp_path / "export").glob("*.atif.json")]
    text = "\n".join(strings_of(exported))
    assert all(benign in text for benign in BENIGN), [b for b in BENIGN if b not in text]
    probe = "|".join(SECRETS[kind][1][:9] for kind in ("github", "openai", "mysql", "aws_secret"))
    probes = [run_main(env, ["search", *mode, "--regex", probe], cwd=cwd)
              for mode in ([], ["--content"])]
    assert [p.returncode for p in probes] == [1, 1], "a regex found a secret that was redacted"


def strings_of(value) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings_of(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings_of(item)]
    return [value] if isinstance(value, str) else []


def test_no_planted_secret_comes_out_of_the_mount(tmp_path):
    from test_memory import FUSE_PROBLEM, client, make_store, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    env, proj, _ = make_store(tmp_path)
    assert plant_store(env["HOME"], "note.txt")
    point = os.path.join(proj, "memory")
    try:
        mount(env, proj)
        files = [os.path.join(point, n) for n in client("ls", point).stdout.split() if n.endswith(".atif.json")]
        assert len(files) >= 6
        served = b"".join(client("cat", f).stdout.encode() for f in files)
        assert MARK.encode() in served
        assert leaks(served) == []
        for _, secret, _ in SECRETS.values():
            assert client("grep", "-R", "-l", "-F", secret[-12:], point).stdout == "", secret  # -R: the documents too
    finally:
        take_down(point)
