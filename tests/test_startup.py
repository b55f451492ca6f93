"""What a command's start costs: orjson without the modules it loads for types trajectoriz never
serializes (core/jsonlib.py), regular expressions kept compiled (core/compiledre.py), digests without
OpenSSL (core/hashes.py). Each gives what the ordinary way gives, or falls back to it."""

import hashlib
import marshal
import os
import re
import subprocess
import sys

import pytest

from core import compiledre, hashes
from redaction import redact

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(code: str, **env) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT, **env}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_orjson_starts_without_dataclasses_and_uuid_which_stay_importable():
    out = run_python(
        "import sys\nfrom core import jsonlib\n"
        "print(sorted(m for m in ('dataclasses', 'uuid', 'inspect', 'platform') if m in sys.modules))\n"
        "print(jsonlib.orjson.dumps({'steps': [{'a': 1.5, 'b': 'é'}]}).decode())\n"
        "import dataclasses, uuid\n"
        "print(hasattr(dataclasses, 'dataclass'), hasattr(uuid, 'uuid4'))\n"
        "@dataclasses.dataclass\n"
        "class Point:\n"
        "    x: int\n"
        "print(jsonlib.orjson.dumps(Point(3)).decode())\n"
        "try:\n"
        "    jsonlib.orjson.dumps(uuid.UUID(int=1))\n"
        "except TypeError:\n"
        "    print('uuid refused')\n")
    assert out.splitlines() == ["[]", '{"steps":[{"a":1.5,"b":"é"}]}', "True True", '{"x":3}', "uuid refused"]


def test_orjson_imported_after_dataclasses_is_the_ordinary_one():
    out = run_python("import dataclasses, uuid\nfrom core import jsonlib\n"
                     "print(jsonlib.orjson.dumps(uuid.UUID(int=1)).decode())")
    assert out.strip() == '"00000000-0000-0000-0000-000000000001"'


LIST_ALL_THEN_MODULES = (  # `list --all` as a command runs it, then which costly modules it loaded
    "import sys, runpy\n"
    "sys.argv = ['trajectoriz.py', 'list', '--all']\n"
    "try:\n"
    "    runpy.run_path('trajectoriz.py', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print('MODULES', sorted(m for m in ('dataclasses', 'uuid', 'inspect', '_hashlib') if m in sys.modules))")


def test_a_first_listing_loads_none_of_the_costly_modules(tmp_path):
    home = tmp_path / "home"
    (home / ".claude" / "projects" / "-w").mkdir(parents=True)
    (home / ".claude" / "projects" / "-w" / "s.jsonl").write_text(
        '{"type":"user","sessionId":"s","cwd":"/w","timestamp":"2026-01-01T00:00:00Z",'
        '"message":{"role":"user","content":"hello with sk-proj-0123456789abcdefghijABCDEFGHIJ"}}\n')
    out = run_python(LIST_ALL_THEN_MODULES, HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"))
    assert "hello with «REDACTED:" in out  # the title was redacted, a marker made: hmac loads OpenSSL then
    assert out.splitlines()[-1] == "MODULES ['_hashlib']"
    out = run_python(LIST_ALL_THEN_MODULES, HOME=str(tmp_path / "empty"), XDG_CACHE_HOME=str(tmp_path / "cache2"))
    assert out.splitlines()[-1] == "MODULES []"


# compiledre -----------------------------------------------------------------------------------
def redact_patterns() -> list:
    return [(pattern.pattern, pattern.flags) for _, _, pattern, _ in redact.ALL_PASSES] + \
           [(redact._KEY_LINE.pattern, redact._KEY_LINE.flags), (redact._UUID.pattern, redact._UUID.flags),
            (redact._MARKER.pattern, redact._MARKER.flags)]


def same_as_re(found: re.Pattern, pattern, flags: int) -> bool:
    ordinary = re.compile(pattern, flags)
    return (found == ordinary and found.groupindex == ordinary.groupindex and found.groups == ordinary.groups
            and found.flags == ordinary.flags)


@pytest.fixture
def kept_at(tmp_path, monkeypatch):
    """The kept file in a folder of the test's own, read afresh."""
    path = str(tmp_path / "patterns.re")
    monkeypatch.setattr(compiledre, "_path", lambda: path)
    monkeypatch.setattr(compiledre, "_kept", None)
    monkeypatch.setattr(compiledre, "_made", {})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return path


def a_new_process(monkeypatch):
    """What a process starting now would read and make."""
    monkeypatch.setattr(compiledre, "_kept", None)
    monkeypatch.setattr(compiledre, "_made", {})


def test_kept_patterns_are_those_re_compiles_and_are_read_back_without_parsing(kept_at, monkeypatch):
    patterns = redact_patterns()
    made = [compiledre.compile(pattern, flags) for pattern, flags in patterns]
    compiledre.save()
    assert os.path.exists(kept_at) and os.stat(kept_at).st_mode & 0o777 == 0o600
    assert all(same_as_re(found, pattern, flags) for found, (pattern, flags) in zip(made, patterns))
    written = os.stat(kept_at).st_mtime_ns

    def no_parsing(*args):
        raise AssertionError("parsed although kept")

    a_new_process(monkeypatch)
    monkeypatch.setattr(compiledre, "_parts", no_parsing)
    read = [compiledre.compile(pattern, flags) for pattern, flags in patterns]
    assert all(same_as_re(found, pattern, flags) for found, (pattern, flags) in zip(read, patterns))
    read_bytes = [p for p in read if isinstance(p.pattern, bytes)]
    text = b"export OPENAI_API_KEY=sk-proj-0123456789abcdefghijABCDEFGHIJ0123 ghp_0123456789abcdefghijABCDEFGHIJ0123"
    assert [[m.span() for m in p.finditer(text.lower())] for p in read_bytes] == \
           [[m.span() for m in re.compile(p.pattern, p.flags).finditer(text.lower())] for p in read_bytes]
    compiledre.save()  # nothing new: not written again
    assert os.stat(kept_at).st_mtime_ns == written


def test_a_process_adds_its_patterns_to_those_kept(kept_at, monkeypatch):
    compiledre.compile(rb"one+")
    compiledre.save()
    a_new_process(monkeypatch)
    compiledre.compile(rb"two+")
    compiledre.save()
    assert set(compiledre._load(kept_at)) == {(rb"one+", 0), (rb"two+", 0)}
    monkeypatch.setattr(compiledre, "MAX_KEPT", 2)
    a_new_process(monkeypatch)
    compiledre.compile(rb"three+")
    compiledre.save()  # too many: the last run's alone
    assert set(compiledre._load(kept_at)) == {(rb"three+", 0)}


def write_kept(path: str, kept: dict, checksum: bool = True) -> None:
    payload = marshal.dumps(kept)
    digest = hashlib.sha256(compiledre._tag().encode() + payload).digest() if checksum else b"\0" * 32
    with open(path, "wb") as handle:
        handle.write(digest + payload)
    os.chmod(path, 0o600)


NEVER = re.compile(rb"(?!)")  # code that matches nothing: a rule switched off, if it were taken


def switched_off(patterns: list) -> dict:
    """Every pattern kept with its own groups but code that matches nothing."""
    off = {}
    for pattern, flags in patterns:
        parts = compiledre._parts(pattern, flags)
        off[(pattern, int(flags))] = (parts[0], compiledre._parts(NEVER.pattern, 0)[1], *parts[2:])
    return off


def test_a_damaged_or_hostile_file_costs_only_the_time_it_saves(kept_at, monkeypatch):
    pattern = rb"(?P<key>sk-[a-z0-9]{20,})"
    with open(kept_at, "wb") as handle:
        handle.write(b"\x00garbage" * 100)
    assert same_as_re(compiledre.compile(pattern), pattern, 0)
    write_kept(kept_at, {(pattern, 0): (0, [999, 1, 2, 3], 1, {"key": 1}, (None, "key"))})  # code the engine refuses
    a_new_process(monkeypatch)
    assert same_as_re(compiledre.compile(pattern), pattern, 0)
    compiledre.save()  # and the file is mended
    a_new_process(monkeypatch)
    assert compiledre._load(kept_at)[(pattern, 0)][1] != [999, 1, 2, 3]
    write_kept(kept_at, {(pattern, 0): "code"})  # another shape altogether
    a_new_process(monkeypatch)
    assert same_as_re(compiledre.compile(pattern), pattern, 0)
    with open(kept_at, "wb") as handle:  # a marshal header that claims two billion items
        handle.write(b"\0" * 32 + b"[\xff\xff\xff\x7f")
    assert compiledre._load(kept_at) == {}


@pytest.mark.parametrize("how", ["no checksum", "writable by others", "a symlink"])
def test_rules_cannot_be_switched_off_by_a_file_that_is_not_ours(kept_at, tmp_path, monkeypatch, how):
    """Code the engine takes but that matches nothing would switch redaction off: such a file is
    read only when its checksum matches and it is this user's, writable by no one else."""
    patterns = [(p.pattern, p.flags) for _, _, p, _ in redact.ALL_PASSES]
    if how == "a symlink":
        elsewhere = str(tmp_path / "elsewhere.re")
        write_kept(elsewhere, switched_off(patterns))
        os.symlink(elsewhere, kept_at)
    else:
        write_kept(kept_at, switched_off(patterns), checksum=how != "no checksum")
        if how == "writable by others":
            os.chmod(kept_at, 0o666)
    assert compiledre._load(kept_at) == {}
    made = [compiledre.compile(pattern, flags) for pattern, flags in patterns]
    assert all(same_as_re(found, pattern, flags) for found, (pattern, flags) in zip(made, patterns))
    os.unlink(kept_at)
    write_kept(kept_at, switched_off(patterns))  # the same file, this user's with its checksum: taken
    assert compiledre._load(kept_at)


def test_nothing_is_written_when_python_writes_no_bytecode(kept_at, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert same_as_re(compiledre.compile(rb"a+b"), rb"a+b", 0)
    compiledre.save()
    assert not os.path.exists(kept_at)


# hashes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1000, hashes.OPENSSL_PAYS - 1, hashes.OPENSSL_PAYS, 3 << 20])
def test_digests_are_hashlibs(size):
    data = os.urandom(size)
    assert hashes.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert hashes.md5(data).hexdigest() == hashlib.md5(data).hexdigest()
    assert hashes.sha256_digest(data) == hashlib.sha256(data).digest()
