"""Red team, second round: attacks on the guarantees of README.md ("Guarantees") by someone who
controls the content and names of session files and databases, and environment variables a
user may plausibly have set. Each test is one attack that worked on main before its fix (or
is marked xfail, strict, when the fix is larger than this round)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from helpers import base_env, cli, run_main
from test_untrusted import SESSION, claude_session, listing, store


def claude_with_first_timestamp(home: str, folder: str, cwd: str, session_id: str, timestamp_json: str) -> str:
    """The recorded Claude session with the timestamp of every record replaced by the raw JSON
    text `timestamp_json`."""
    path = claude_session(home, folder, session_id + ".jsonl", cwd, session_id)
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    lines = []
    for record in records:
        text = json.dumps(record)
        if "timestamp" in record:
            text = text.replace(json.dumps(record["timestamp"]), timestamp_json, 1)
        lines.append(text)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


# 5. one bad entry: timestamps ------------------------------------------------------------------
@pytest.mark.parametrize("timestamp", ["1e400", "Infinity"])
def test_an_infinite_timestamp_hangs_no_command(tmp_path, timestamp):
    """`1e400` is valid JSON; orjson refuses it, the standard library's json (the fallback) reads
    it as inf, and `epoch()` divided inf by 1000 until it would be below 1e11: forever."""
    env, project = store(tmp_path)
    claude_with_first_timestamp(env["HOME"], "-proj", project, "3e400000-0000-4000-8000-000000000000", timestamp)
    for args in (["list", "--all"], ["show", "3e400000-0000-4000-8000-000000000000"]):
        try:
            result = cli(*args, env=env, cwd=project, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{' '.join(args)} hung on a session whose timestamps are {timestamp}")
        assert result.returncode == 0, result.stderr
    assert len(listing(env, "--all", cwd=project)) == 2


@pytest.mark.parametrize("timestamp", [
    '"0001-01-01T00:00:00"',            # naive: local time before year 1 in UTC+ zones -> ValueError
    '"0001-01-01T00:00:00+14:00"',      # before year 1: fromtimestamp fails in list
    '"9999-12-31T23:59:59-14:00"',      # after year 9999
    '"\u00b2"',                         # str.isdigit() is true, int() refuses it
    "1" + "0" * 400,                    # an integer no float holds
])
def test_an_out_of_range_timestamp_is_no_exit(tmp_path, timestamp):
    env, project = store(tmp_path)
    claude_with_first_timestamp(env["HOME"], "-proj", project, "0dd00000-0000-4000-8000-000000000000", timestamp)
    for args in (["list", "--all"], ["list"], ["list", "--json"], ["search", "SCENARIO"],
                 ["search", "--content", "note.txt"], ["export", "--out", str(tmp_path / "out")],
                 ["show", "--markdown", "0dd00000-0000-4000-8000-000000000000"]):
        result = run_main(env, args, cwd=project)
        assert result.returncode == 0, (args, result.stderr)
    rows = listing(env, "--all", cwd=project)
    assert len(rows) == 2
    odd = next(r for r in rows if r["native_id"].startswith("0dd"))
    assert odd["first_message"].startswith("SCENARIO")  # read, not an "(unreadable session)"
    assert len(list((tmp_path / "out").glob("*.atif.json"))) == 2


@pytest.fixture
def tmpfs_path():
    """A folder on tmpfs, whose times go past year 9999 (ext4's stop at 2446)."""
    import shutil
    import tempfile

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    folder = tempfile.mkdtemp(dir="/dev/shm", prefix="attacks-")
    try:
        yield __import__("pathlib").Path(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_far_future_mtime_is_no_exit(tmpfs_path):
    """A session with no timestamp starts at its file's mtime, which an unpacked archive (or
    `touch`) may set to any time tmpfs or btrfs hold: one past year 9999 made `list` and the
    mount fail in datetime.fromtimestamp; its nanoseconds (over 64 bits past year 2554) made
    orjson fail when it named the cached document ("internal error" from every command)."""
    env, project = store(tmpfs_path)
    path = claude_with_first_timestamp(env["HOME"], "-proj", project, "0ff00000-0000-4000-8000-000000000000", "null")
    os.utime(path, (1e13, 1e13))
    if os.stat(path).st_mtime < 1e12:
        pytest.skip("this file system cannot hold such a time")
    for args in (["list", "--all"], ["list"], ["search", "SCENARIO"], ["stats"], ["agents"],
                 ["search", "--content", "note.txt"], ["export", "--out", str(tmpfs_path / "o")],
                 ["show", "--markdown", "0ff00000-0000-4000-8000-000000000000"]):
        result = run_main(env, args, cwd=project)
        assert result.returncode == 0, (args, result.stderr)
    from mount.memoryfs import MemoryFS

    fs = MemoryFS(project, env)
    names = [n for n, _, _ in fs.readdir("/", None) if n.endswith(".atif.json")]
    assert len(names) == 2
    for name in names:
        assert fs.getattr("/" + name)["st_size"] > 0


# 5. terminal escape sequences ------------------------------------------------------------------
ESCAPES = "\u001b]0;owned\u0007\u001b]52;c;cm0gLXJmIH4K\u0007\u001b[2J\u009b31m\r"


def test_show_markdown_never_drives_the_terminal(tmp_path):
    """`show --markdown` printed messages, tool output and the recorded working directory as
    they were: an OSC 52 sequence in a tool's output wrote the user's clipboard, OSC 0 set the
    window title, CSI cleared the screen, a carriage return hid what came before it."""
    env, project = store(tmp_path)
    path = claude_session(env["HOME"], "-esc", "e5c00000-0000-4000-8000-000000000000.jsonl",
                          project + "/sub" + ESCAPES, "e5c00000-0000-4000-8000-000000000000")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("note.txt", "note.txt" + json.dumps(ESCAPES)[1:-1]))
    result = run_main(env, ["show", "--markdown", "e5c00000-0000-4000-8000-000000000000"], cwd=project)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode("utf-8")
    assert "note.txt" in out
    bad = sorted({c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f})
    assert not bad, f"control characters printed: {bad!r}"
    for args in (["list", "--all"], ["search", "--content", "note.txt"], ["agents"], ["stats", "--all"]):
        shown = run_main(env, args, cwd=project).stdout.decode("utf-8")
        assert "\u001b" not in shown and "\u0007" not in shown, args



# 5. hostile SQLite -----------------------------------------------------------------------------
def hostile_opencode_home(tmp_path, script: str) -> dict:
    """The live opencode store, checkpointed into one file (a copy: ours to change), then
    changed by `script`."""
    import shutil
    import sqlite3

    from helpers import LIVE

    env = base_env(tmp_path)
    data = os.path.join(env["HOME"], ".local", "share", "opencode")
    os.makedirs(data)
    source = os.path.join(LIVE, "opencode-1.18.33", ".local", "share", "opencode", "opencode.db")
    staging = str(tmp_path / "staging")
    os.makedirs(staging)
    for suffix in ("", "-wal"):
        shutil.copy2(source + suffix, os.path.join(staging, "opencode.db" + suffix))
    db = sqlite3.connect(os.path.join(staging, "opencode.db"))  # our own copy
    db.execute("PRAGMA journal_mode=DELETE")
    db.executescript(script)
    db.commit()
    db.close()
    shutil.copy2(os.path.join(staging, "opencode.db"), os.path.join(data, "opencode.db"))
    return env


ENDLESS = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c)"


@pytest.mark.parametrize("script", [
    # the session table replaced by a view whose rows never come: SQLite runs a store's views
    "ALTER TABLE session RENAME TO session_real;"
    f"CREATE VIEW session AS {ENDLESS} SELECT s.* FROM session_real s, c WHERE c.n < 0;",
    # the message table too (read by the listing's subqueries and by every translation)
    "ALTER TABLE message RENAME TO message_real;"
    f"CREATE VIEW message AS {ENDLESS} SELECT m.* FROM message_real m, c WHERE c.n < 0;",
], ids=["session view", "message view"])
def test_a_sqlite_view_that_never_ends_hangs_no_command(tmp_path, script):
    env = hostile_opencode_home(tmp_path, script)
    for args in (["list", "--all"], ["agents"]):
        try:
            result = cli(*args, env=env, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{' '.join(args)} hung on an opencode store whose tables are endless views")
        assert result.returncode == 0, (args, result.stderr)


def test_a_sqlite_generated_column_that_costs_hours_is_cut_short(tmp_path):
    """A generated column is computed on every read: Crush's listing sorts a session's user
    messages to take the first one's `parts`, so SQLite builds `parts` for each of them; 100 MB
    for each of 3,000 rows of a store of kilobytes kept `list` busy for many minutes (the 64 MB
    cap on a value is checked once SQLite has built it). Every statement on a snapshot now has
    a deadline (sqlite_ro.QUERY_SECONDS, lowered here to keep the test short)."""
    import sqlite3
    import sys

    import test_agent_crush
    from helpers import ROOT

    env = base_env(tmp_path)
    project = str(tmp_path / "proj-crush")
    path = test_agent_crush.build_database(project)
    db = sqlite3.connect(path)  # our own store, built just now
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages'"
                              " AND sql IS NOT NULL").fetchall():
        db.execute(f'DROP INDEX "{name}"')  # a sort of every user message then builds each one's parts
    db.executescript("""
        ALTER TABLE messages RENAME COLUMN parts TO parts_old;
        ALTER TABLE messages ADD COLUMN parts TEXT GENERATED ALWAYS AS (printf('%.*c', 100000000, 'x')) VIRTUAL;
        INSERT INTO messages (id, session_id, role, parts_old, created_at, updated_at)
            SELECT 'flood-' || c.n, (SELECT id FROM sessions WHERE coalesce(parent_session_id, '') = '' LIMIT 1), 'user', '[]', c.n, c.n
            FROM (WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 3000)
                  SELECT n FROM c) c;
    """)
    db.commit()
    db.close()
    program = ("import sys; sys.path.insert(0, sys.argv[1]); import agents.sqlite_ro as s; "
               "s.QUERY_SECONDS = 2; import trajectoriz; sys.exit(trajectoriz.main(sys.argv[2:]))")
    try:
        result = subprocess.run([sys.executable, "-c", program, ROOT, "list", "--all"], env=env,
                                cwd=project, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("list --all spent minutes in one SQLite query over a store of kilobytes")
    assert result.returncode == 0, result.stderr
    assert b"unreadable session" in result.stdout  # the store's failure is visible, as for any damage


# 3. secrets ------------------------------------------------------------------------------------
STRUCTURED = {  # tool arguments as the model sent them: JSON objects and argument vectors
    "file_path": "/tmp/agents/proj-claude/note.txt",
    "password": "Correct-Horse-alvPGC9Ksk",
    "env": {"OPENAI_API_KEY": "yVB4P2FGFiWP4Fxy30QyUEC2", "DB_PASSWORD": "8p0aOW9mkOhzHr"},
    "headers": {"Authorization": "Bearer 2HyFQFjUWiy77hnsqDUgECXNVGxLs7iUpM"},
    "argv": ["sshpass", "-p", "wdGdGgRHKcPzQx1", "ssh", "deploy@host"],
    "mysql": ["mysql", "-uroot", "-pT6UtX3K7ltvlGh", "app"],
}
STRUCTURED_SECRETS = ["Correct-Horse-alvPGC9Ksk", "yVB4P2FGFiWP4Fxy30QyUEC2", "8p0aOW9mkOhzHr",
                      "2HyFQFjUWiy77hnsqDUgECXNVGxLs7iUpM", "wdGdGgRHKcPzQx1", "T6UtX3K7ltvlGh"]
STRUCTURED_BENIGN = {"sort_key": "created_at", "max_tokens": "4096", "token_count": "12",
                     "cmd": ["git", "commit", "-m", "password reset flow"], "key": "a1b2c3d4e5f6g7h8"}


def test_secrets_in_structured_tool_arguments_stay_out(tmp_path):
    """Each string of a document was redacted on its own: the value of `{"password": "..."}`,
    of an `env` object's `OPENAI_API_KEY`, of a `headers` object's `Authorization`, and a
    password in an argument vector (`["sshpass", "-p", "..."]`) are strings that, alone, look
    like nothing, and came out of show, show --markdown, search --content, export and the
    cache. Tool arguments are JSON objects for every agent (MCP tools, Codex's argv)."""
    env, project = store(tmp_path)
    path = os.path.join(env["HOME"], ".claude", "projects", "-proj", SESSION + ".jsonl")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    old = '"name":"Read","input":{"file_path":"/tmp/agents/proj-claude/note.txt"}'
    assert old in text
    arguments = {**STRUCTURED, **STRUCTURED_BENIGN}
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old, '"name":"Read","input":' + json.dumps(arguments)))
    outputs = {}
    for args in (["show", SESSION], ["show", "--markdown", SESSION], ["search", "--content", "file_path"],
                 ["search", "--content", "--json", "file_path"], ["export", "--out", str(tmp_path / "out")]):
        result = run_main(env, args, cwd=project)
        assert result.returncode == 0, (args, result.stderr)
        outputs[" ".join(args)] = result.stdout
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            outputs[str(path)] = path.read_bytes()
    for folder, _, files in os.walk(tmp_path / "cache"):
        for name in files:
            outputs[os.path.join(folder, name)] = open(os.path.join(folder, name), "rb").read()
    leaked = [(where, secret) for where, data in outputs.items() for secret in STRUCTURED_SECRETS
              if secret.encode() in data]
    assert not leaked, leaked
    doc = json.loads(outputs["show " + SESSION])
    call = next(c for s in doc["steps"] for c in s.get("tool_calls") or () if c["function_name"] == "Read")
    for key, value in STRUCTURED_BENIGN.items():  # ordinary values stay as they are
        assert call["arguments"][key] == value
    assert call["arguments"]["file_path"] == STRUCTURED["file_path"]
    assert call["arguments"]["argv"][:2] == ["sshpass", "-p"]


def test_a_secret_cut_by_the_first_message_limit_stays_out(tmp_path):
    """Listings cut the first message at 200 characters, and redacted what was left: the head
    of a token the cut fell in (`ghp_N1fHW93RYY7T…`) no longer has its vendor's length, so it
    was printed by list, list --json, search and kept in the index cache. (On main this also
    failed tests/test_redteam.py for Droid, whose payload happened to be cut so.)"""
    token = "ghp_N1fHW93RYY7TKuHmvguTEKhCpqHKCn8TSCpq"
    env, project = store(tmp_path)
    path = os.path.join(env["HOME"], ".claude", "projects", "-proj", SESSION + ".jsonl")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    prompt = "SCENARIO " + "word " * 33 + "push with " + token + " please"  # the token spans character 200
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("SCENARIO claude-2", prompt))
    head = token[:12].encode()
    outputs = [run_main(env, args, cwd=project).stdout for args in
               (["list"], ["list", "--json"], ["search", "SCENARIO"], ["search", "--json", "SCENARIO"],
                ["show", "--markdown", SESSION])]
    for folder, _, files in os.walk(tmp_path / "cache"):
        outputs += [open(os.path.join(folder, name), "rb").read() for name in files]
    assert not [data for data in outputs if head in data]
    assert b"SCENARIO word word" in outputs[1]  # the first message is still listed


# 4. private folders ----------------------------------------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder another user's")
def test_a_cache_folder_inside_another_users_folder_is_never_used(tmp_path):
    """XDG_CACHE_HOME=/tmp/cache, where another user made /tmp/cache first: trajectoriz made its
    own folder in it, private and ours, and used it; but the owner of /tmp/cache can rename
    what is in it, and swapped our folder for a symlink to a folder of ours once the check was
    made (a mount serves for days on one check): the cache, then written there, went where the
    other user chose (and the documents read back were theirs)."""
    from core import cache

    shared = tmp_path / "cache"
    shared.mkdir()
    os.chmod(shared, 0o777)
    os.chown(shared, 65534, 65534)  # nobody's
    target = tmp_path / "victim"
    target.mkdir(mode=0o700)
    env = base_env(tmp_path)
    env["XDG_CACHE_HOME"] = str(shared)
    cache._checked.clear()
    try:
        folder = cache.cache_dir(env)
        cache.save(env, "probe.json", {"written": True})
        if os.path.isdir(folder):  # the other user's move
            os.rename(folder, str(shared / "moved"))
            os.symlink(str(target), folder)
        cache.save(env, "probe.json", {"written": True})
        assert not (target / "probe.json").exists(), "the cache was written where another user pointed it"
        assert not os.path.lexists(shared / "moved" / "probe.json"), "a cache in another user's folder was used"
        result = run_main(env, ["list", "--all"])
        assert result.returncode == 0, result.stderr
        assert os.listdir(target) == []
    finally:
        cache._checked.clear()


# 3. secrets: what a marker tells -----------------------------------------------------------------
def show_with_password(tmp_path, password: str, name: str = "user") -> tuple[dict, bytes]:
    env, project = store(tmp_path / name)
    path = os.path.join(env["HOME"], ".claude", "projects", "-proj", SESSION + ".jsonl")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("note.txt back", "note.txt back (DB_PASSWORD=" + password + ")"))
    shown = run_main(env, ["show", SESSION], cwd=project).stdout
    assert b"REDACTED:password:" in shown and password.encode() not in shown
    return env, shown


def password_marker(shown: bytes) -> bytes:
    return shown.split(b"REDACTED:password:")[1][:8]


def test_a_redaction_marker_is_no_oracle_for_a_guessed_password(tmp_path):
    """The marker showed the first 8 hex digits of sha256(secret): for a password of words and
    digits, a dictionary of a few million guesses finds the one whose hash starts so, without
    ever reaching the machine again (an agent reading memory/ under a prompt injection, or
    anyone given an export). Keyed with the user's own key, the digits tell nothing."""
    import hashlib

    password = "Summer2024!Acme"
    env, shown = show_with_password(tmp_path, password)
    assert hashlib.sha256(password.encode()).hexdigest()[:8].encode() not in shown
    key = os.path.join(env["HOME"], ".local", "share", "trajectoriz", "marker.key")
    assert os.stat(key).st_mode & 0o777 == 0o600 and os.path.getsize(key) == 32
    assert os.stat(os.path.dirname(key)).st_mode & 0o777 == 0o700


def test_markers_stay_the_same_for_a_user_and_differ_between_users(tmp_path):
    """One secret gets one marker in every run of one user (a reader still tells two mentions
    of it from two secrets), and another one for another user."""
    env, shown = show_with_password(tmp_path, "Summer2024!Acme")
    again = cli("show", SESSION, env=env, cwd=os.path.join(str(tmp_path / "user"), "proj"))
    assert again.returncode == 0, again.stderr
    assert password_marker(again.stdout) == password_marker(shown)
    _, other = show_with_password(tmp_path, "Summer2024!Acme", name="other")
    assert password_marker(other) != password_marker(shown)


def test_a_guess_written_into_a_session_of_ones_own_gives_another_marker(tmp_path):
    """With one marker per secret across sessions, an agent that reads memory/ could write
    `DB_PASSWORD=<guess>` into its own session (which is recorded and served beside the
    others) and compare the marker it gets with the victim's: a guess per line, online. A
    marker is also keyed with its session: the right guess gives another marker."""
    password = "Summer2024!Acme"
    env, shown = show_with_password(tmp_path, password)
    project = os.path.join(str(tmp_path / "user"), "proj")
    guesser = "0a11ce00-0000-4000-8000-000000000000"
    path = claude_session(env["HOME"], "-proj", guesser + ".jsonl", project, guesser)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("note.txt back", "note.txt back (DB_PASSWORD=" + password + ")"))
    guessed = run_main(env, ["show", guesser], cwd=project).stdout
    assert password_marker(guessed) != password_marker(shown)


@pytest.mark.parametrize("plant", ["readable", "link"])
def test_a_marker_key_others_can_read_or_a_link_is_replaced(tmp_path, plant):
    """A key file that others may read (they may have it) or a symlink to a file an attacker
    chose is not used: a new key is made in its place, and the attacker's file is untouched."""
    import hashlib
    import hmac

    known = b"k" * 32
    folder = os.path.join(str(tmp_path / "user"), "home", ".local", "share", "trajectoriz")
    os.makedirs(folder, mode=0o700)
    key = os.path.join(folder, "marker.key")
    chosen = tmp_path / "chosen.key"
    chosen.write_bytes(known)
    chosen.chmod(0o600)
    if plant == "readable":
        with open(key, "wb") as handle:
            handle.write(known)
        os.chmod(key, 0o644)
    else:
        os.symlink(chosen, key)
    _, shown = show_with_password(tmp_path, "Summer2024!Acme")
    assert password_marker(shown) != hmac.new(known, b"Summer2024!Acme", hashlib.sha256).hexdigest()[:8].encode()
    assert not os.path.islink(key) and os.stat(key).st_mode & 0o777 == 0o600
    with open(key, "rb") as handle:
        assert handle.read() != known
    assert chosen.read_bytes() == known


# 5. devices and FIFOs --------------------------------------------------------------------------
def test_a_fifo_beside_a_store_is_never_opened(tmp_path, monkeypatch):
    """A FIFO (or, through a symlink, a device: a tape that rewinds, /dev/watchdog) named like a
    SQLite store's -wal file was opened, then found not regular and closed: opening a device
    is already an act (README: "FIFOs and devices named like sessions are never opened")."""
    import stat as stat_module

    env = hostile_opencode_home(tmp_path, "")
    wal = os.path.join(env["HOME"], ".local", "share", "opencode", "opencode.db-wal")
    os.mkfifo(wal)
    opened = []
    real_open = os.open

    def recording_open(path, flags, *args, **kwargs):
        try:
            if stat_module.S_ISFIFO(os.stat(path).st_mode):
                opened.append(path)
        except (OSError, TypeError, ValueError):
            pass
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    result = run_main(env, ["list", "--all"])
    monkeypatch.undo()
    assert result.returncode == 0, result.stderr
    assert not opened, f"opened: {opened}"


def test_an_aider_token_count_of_hundreds_of_digits_fails_no_session(tmp_path):
    """`> Tokens: <400 digits> sent`: float() reads it as inf, int(round(inf)) raised
    OverflowError (only ValueError was caught), and the whole run became a failure document."""
    import shutil

    import agents.aider as aider
    from test_agent_aider import LIVE_AIDER

    env = base_env(tmp_path)
    project = tmp_path / "proj-aider"
    project.mkdir()
    source = os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE)
    with open(source, encoding="utf-8") as handle:
        text = handle.read()
    assert "> Tokens: " in text
    target = project / aider.HISTORY_FILE
    target.write_text(__import__("re").sub(r"> Tokens: \S+ sent", "> Tokens: " + "1" * 400 + " sent", text, count=1))
    shutil.copy2(os.path.join(os.path.dirname(source), ".aider.input.history"), project)
    env["PWD"] = str(project)
    rows = listing(env, "--all", cwd=str(project))
    assert rows
    for row in rows:
        doc = json.loads(run_main(env, ["show", row["id"]], cwd=str(project)).stdout)
        assert "error" not in doc["extra"], doc["extra"]["error"]


def test_a_native_id_holding_a_secret_is_no_oracle(tmp_path):
    """The native id comes from the store (Claude: the file name). It was printed by `list
    --json` redacted, but matched raw: `show <prefix>` and `search --regex` answered yes or no
    on each next character of a secret in it."""
    env, project = store(tmp_path)
    secret = "ghp_" + "Zk3vQ9wT2mLx8RbN4cYp7HdJ5sGf1AeUo6Wi"
    claude_session(env["HOME"], "-proj", secret + ".jsonl", project, "4e5f0000-0000-4000-8000-000000000000")
    rows = listing(env, "--all")
    assert len(rows) == 2 and all(secret[:8] not in json.dumps(r) for r in rows)
    for probe in (secret[:10], secret):
        assert run_main(env, ["show", probe], cwd=project).returncode == 2
    assert run_main(env, ["search", "--regex", "ghp_Zk3v"], cwd=project).returncode == 1
    odd = next(r for r in rows if "REDACTED" in r["native_id"])
    assert run_main(env, ["show", odd["id"]], cwd=project).returncode == 0
    assert run_main(env, ["show", odd["native_id"]], cwd=project).returncode == 0  # the id as printed
    import hashlib  # the short id was sha256("claude:<native id>"): an offline oracle as well

    raw = hashlib.sha256(f"claude:{secret}".encode()).hexdigest()[:8]
    assert odd["id"] != f"cl-{raw}" and raw not in json.dumps(rows)


def test_a_git_file_naming_another_folder_makes_memory_write_nothing_there(tmp_path):
    """`.git` may be a file saying `gitdir: <anywhere>`: memory added its mountpoint to
    `<anywhere>/info/exclude`, creating it — inside an agent's store, say."""
    from mount import memory

    elsewhere = tmp_path / "store"
    elsewhere.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".git").write_text(f"gitdir: {elsewhere}\n")
    memory.exclude_from_git(str(project / "memory"))
    assert list(elsewhere.iterdir()) == []
    real = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(real)], check=True)
    os.remove(real / ".git" / "info" / "exclude")
    memory.exclude_from_git(str(real / "memory"))
    assert (real / ".git" / "info" / "exclude").read_text() == "/memory/\n"
    assert oct(os.stat(real / ".git" / "info" / "exclude").st_mode & 0o777) == "0o600"


def test_a_marker_key_that_cannot_be_kept_is_said(tmp_path):
    """A data folder that is a symlink (or another user's) is not used: each run made markers
    of its own key, silently, so that cached documents and new ones disagreed."""
    env, project = store(tmp_path / "user")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.makedirs(os.path.join(env["HOME"], ".local", "share"))
    os.symlink(elsewhere, os.path.join(env["HOME"], ".local", "share", "trajectoriz"))
    path = os.path.join(env["HOME"], ".claude", "projects", "-proj", SESSION + ".jsonl")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("note.txt back", "note.txt back (DB_PASSWORD=Summer2024!Acme)"))
    result = cli("show", SESSION, env=env, cwd=project)
    assert result.returncode == 0 and b"REDACTED:password:" in result.stdout
    assert b"no key for redaction markers can be kept" in result.stderr
    assert list(elsewhere.iterdir()) == []
