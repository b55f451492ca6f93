"""Secret redaction: every kind is caught, ordinary text is left alone, and no secret planted in
any agent's store survives into what trajectoriz outputs."""

import json
import os
import sqlite3

import pytest

from helpers import assert_valid, cli
from homes import agent_homes
from stores import run_main
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


def plant(root: str, anchor: str, payload: str) -> int:
    """Append `payload` after every mention of `anchor` in a copied store (text files and the
    text columns of SQLite databases). Returns how many files were changed."""
    changed = 0
    escaped = json.dumps(payload)[1:-1]  # valid inside JSON strings, plain files and JSON columns
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names]
    for path in paths:
        if path.endswith(("-wal", "-shm")):
            continue
        with open(path, "rb") as handle:
            head = handle.read(16)
        if head.startswith(b"SQLite format 3"):
            changed += plant_sqlite(path, anchor, escaped)
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        if anchor in text:
            open(path, "w", encoding="utf-8").write(text.replace(anchor, f"{anchor} {escaped}"))
            changed += 1
    return changed


def plant_sqlite(path: str, anchor: str, escaped: str) -> int:
    connection = sqlite3.connect(path)
    tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    touched = 0
    for table in tables:
        for column in connection.execute(f'PRAGMA table_info("{table}")').fetchall():
            name = column[1]  # any column holding text, whatever its declared type (Crush: BLOB)
            touched += connection.execute(
                f'UPDATE "{table}" SET "{name}" = replace("{name}", ?, ?) '
                f'WHERE typeof("{name}") = \'text\' AND instr("{name}", ?)',
                (anchor, f"{anchor} {escaped}", anchor)).rowcount
    connection.commit()
    connection.close()
    return 1 if touched else 0


SURVIVORS = list(SECRETS.values()) + ["Zq8Wx2Lm5Rt9", "Vx7Qm2Tz9", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"]


def assert_no_secret(data: bytes, where: str) -> None:
    for secret in SURVIVORS:
        assert secret.encode() not in data, f"{secret} survived in {where}"


@pytest.mark.parametrize("home", agent_homes(), ids=lambda h: h.agent)
def test_no_planted_secret_survives_in_any_agents_output(home, tmp_path):
    """Secrets planted next to text every agent's documents show (its `anchor`): none survives
    export, show or search --content, ordinary text around them is intact, and --no-redact
    gives them back (proof that they were planted where the documents read)."""
    root = tmp_path / "store"
    root.mkdir()
    env = home.build(root)
    payload = " ".join(list(SECRETS.values()) + list(ASSIGNMENTS.values()) + [PRIVATE_KEY] + ORDINARY)
    assert plant(str(root), home.anchor, payload), f"{home.anchor!r} is nowhere in the store"
    cwd = env.get("PWD", str(tmp_path))
    out = tmp_path / "out"
    result = cli("export", "--all", "--out", str(out), env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    documents = [json.loads(p.read_bytes()) for p in out.glob("*.atif.json")]
    raw = b"".join(p.read_bytes() for p in out.glob("*.atif.json"))
    assert documents and home.anchor.encode() in raw
    assert_no_secret(raw, "export")
    for text in ORDINARY:
        assert json.dumps(text)[1:-1].encode() in raw
    redacted = [d for d in documents if d["extra"].get("redactions")]
    assert redacted and all(set(d["extra"]["redactions"]) >= {"openai", "github"} for d in redacted)
    for doc in redacted:
        assert_valid(doc)
        shown = run_main(env, ["show", doc["extra"]["short_id"]], cwd=cwd)
        assert shown.returncode == 0 and b"REDACTED" in shown.stdout
        assert_no_secret(shown.stdout, "show")
    for mode in ([], ["--json"]):
        searched = run_main(env, ["search", "--content", "--limit", "0", *mode, home.anchor], cwd=cwd)
        assert searched.returncode == 0 and b"REDACTED" in searched.stdout, searched.stderr
        assert_no_secret(searched.stdout + searched.stderr, f"search --content {' '.join(mode)}")
    unredacted = run_main(env, ["export", "--all", "--no-redact", "--out", str(tmp_path / "raw")], cwd=cwd)
    assert unredacted.returncode == 0
    assert SECRETS["openai"].encode() in b"".join(p.read_bytes() for p in (tmp_path / "raw").glob("*.atif.json"))


def test_no_planted_secret_survives_in_the_mount(tmp_path):
    """The mount serves the same redacted bytes: planted secrets are found by no grep over it."""
    from test_memory import FUSE_PROBLEM, client, make_store, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    env, proj, _ = make_store(tmp_path)
    payload = " ".join(list(SECRETS.values()) + list(ASSIGNMENTS.values()) + [PRIVATE_KEY] + ORDINARY)
    assert plant(env["HOME"], "note.txt", payload)
    point = os.path.join(proj, "memory")
    try:
        mount(env, proj)
        files = [os.path.join(point, n) for n in client("ls", point).stdout.split() if n.endswith(".atif.json")]
        assert len(files) >= 6
        served = b"".join(client("cat", f).stdout.encode() for f in files)
        assert served.count(b"REDACTED:openai") >= len(files) - 1
        assert_no_secret(served, "the mount")
        for secret in SURVIVORS:
            assert client("grep", "-r", "-l", "-F", secret, point).stdout == "", secret
    finally:
        take_down(point)
