"""Secret redaction: every kind is caught, ordinary text is left alone, and no secret planted in
any agent's store survives into what trajectoriz outputs."""

import glob
import json
import os
import shutil
import sqlite3

import pytest

from helpers import LIVE, assert_valid, base_env, cli
from redact import redact

SECRETS = {
    "anthropic": "sk-ant-api03-Q2x9TfLm4RwZpB7nVc8KdYh3JsAe6GuXo1Ni5Pq0Wt-AbCdEfAA",
    "openai": "sk-proj-7hT2mQ9xWcLz4RbNp8VdKs3YfJg6AeU1",
    "google": "AIzaSyD4-xQ7mT2wR9pL5vK8nB3cF6hJ1gE0aZy",
    "github": "ghp_Xy7Qm2Tw9Rp4Lz8Vc3Nb6Kd1Hs5Jf0Ga2UeR",
    "gitlab": "glpat-x7Tq2Wm9Rp4Lz8Vc3Nb6",
    "slack": "xoxb-2741826392-9918273645-Qx7Tm2Wp9Rz4",
    "stripe": "sk_live_51Hx7Tq2Wm9Rp4Lz8Vc3Nb6Kd",
    "aws": "AKIAQ7XM2TW9RP4LZ8VC",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MTcwMDAwMDAwMH0.Qx7Tm2Wp9Rz4Lk8Vc3Nb6Kd1",
}
ASSIGNMENTS = {"assignment": "DEPLOY_TOKEN=Zq8Wx2Lm5Rt9", "url_password": "postgres://admin:Vx7Qm2Tz9@db.internal:5432/app"}
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAC3NzaC1lZDI1NTE5\n-----END OPENSSH PRIVATE KEY-----"
ORDINARY = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "request 550e8400-e29b-41d4-a716-446655440000",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "max_tokens=4096 and sort_key=lambda and PASSWORD=$DB_PASSWORD and API_KEY=<your key>",
    "see https://example.com:8080/path@v2 and the task-oriented design",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
]


@pytest.mark.parametrize("kind,secret", sorted(SECRETS.items()))
def test_each_kind_is_replaced_by_a_hashed_marker(kind, secret):
    text = f'{{"output": "the key is {secret} ok"}}'.encode()
    out, counts = redact(text)
    assert secret.encode() not in out
    assert counts == {kind: 1}
    assert f"«REDACTED:{kind}:".encode() in out and out.endswith(b' ok"}')
    json.loads(out)


def test_assignments_urls_and_private_keys_keep_their_context():
    text = json.dumps({"cmd": f"export {ASSIGNMENTS['assignment']}; psql {ASSIGNMENTS['url_password']}",
                       "file": PRIVATE_KEY}).encode()
    out, counts = redact(text)
    doc = json.loads(out)
    assert doc["cmd"].startswith("export DEPLOY_TOKEN=«REDACTED:assignment:")
    assert "postgres://admin:«REDACTED:url_password:" in doc["cmd"] and "@db.internal:5432/app" in doc["cmd"]
    assert doc["file"].startswith("«REDACTED:private_key:") and "b3BlbnNz" not in doc["file"]
    assert counts == {"assignment": 1, "url_password": 1, "private_key": 1}


def test_the_same_secret_gets_the_same_marker():
    secret = SECRETS["openai"]
    out, counts = redact(f"{secret} and again {secret}".encode())
    first, second = out.decode().split(" and again ")
    assert first == second and counts == {"openai": 2}


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_mangled(text):
    data = json.dumps({"t": text}).encode()
    assert redact(data) == (data, {})


def plant(home: str, payload: str) -> int:
    """Append `payload` after every mention of note.txt in a copied store (text files and the
    text columns of SQLite databases). Returns how many files were changed."""
    changed = 0
    escaped = json.dumps(payload)[1:-1]  # valid inside JSON strings, plain files and JSON columns
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(home) for name in names]
    for path in paths:
        if path.endswith(("-wal", "-shm")):
            continue
        with open(path, "rb") as handle:
            head = handle.read(16)
        if head.startswith(b"SQLite format 3"):
            changed += plant_sqlite(path, escaped)
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        if "note.txt" in text:
            open(path, "w", encoding="utf-8").write(text.replace("note.txt", f"note.txt {escaped}"))
            changed += 1
    return changed


def plant_sqlite(path: str, escaped: str) -> int:
    connection = sqlite3.connect(path)
    tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    touched = 0
    for table in tables:
        for column in connection.execute(f'PRAGMA table_info("{table}")'):
            if column[2].upper() in ("TEXT", ""):
                touched += connection.execute(
                    f'UPDATE "{table}" SET "{column[1]}" = replace("{column[1]}", \'note.txt\', ?) '
                    f'WHERE "{column[1]}" LIKE \'%note.txt%\'', (f"note.txt {escaped}",)).rowcount
    connection.commit()
    connection.close()
    return 1 if touched else 0


@pytest.mark.parametrize("live", sorted(glob.glob(os.path.join(LIVE, "*", ""))), ids=lambda p: p.split("/")[-2])
def test_no_planted_secret_survives_in_any_agents_output(live, tmp_path):
    home = str(tmp_path / "home")
    shutil.copytree(live, home)
    payload = " ".join(list(SECRETS.values()) + list(ASSIGNMENTS.values()) + [PRIVATE_KEY] + ORDINARY)
    if not plant(home, payload):
        pytest.skip("this store never mentions note.txt")
    env = base_env(tmp_path, home=home)
    out = tmp_path / "out"
    result = cli("export", "--all", "--out", str(out), env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    documents = [json.loads(p.read_bytes()) for p in out.glob("*.atif.json")]
    raw = b"".join(p.read_bytes() for p in out.glob("*.atif.json"))
    if not documents or b"note.txt" not in raw:
        pytest.skip("no translator for this store yet")
    for secret in list(SECRETS.values()) + ["Zq8Wx2Lm5Rt9", "Vx7Qm2Tz9", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"]:
        assert secret.encode() not in raw, f"{secret} survived"
    for text in ORDINARY:
        assert json.dumps(text)[1:-1].encode() in raw
    redacted = [d for d in documents if d["extra"].get("redactions")]
    assert redacted and all(set(d["extra"]["redactions"]) >= {"openai", "github"} for d in redacted)
    for doc in redacted:
        assert_valid(doc)
    unredacted = cli("export", "--all", "--no-redact", "--out", str(tmp_path / "raw"), env=env, cwd=str(tmp_path))
    assert unredacted.returncode == 0
    assert SECRETS["openai"].encode() in b"".join(p.read_bytes() for p in (tmp_path / "raw").glob("*.atif.json"))
