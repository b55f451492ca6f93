"""The file-access layer the agents read their stores through (core/storefs.py): it answers as
`os`, `glob` and `open` do, notes what a listing looked at only through its own calls, and
nothing in the program replaces a function of `os` or `builtins` to see the rest."""

from __future__ import annotations

import ast
import glob
import os

from hypothesis import given, settings, strategies as st

from core import storefs
from test_layout import ROOT, module_files

TREE = ["a/b/c.json", "a/.h/x.json", "a/b/d/e.jsonl", "s/x.traj.json", "s/t/u/v.traj.json", "q[1]/z.json",
        ".hid/y.json", "f.json", "chats/x/y/store.db", "sessions/2026/01/02/rollout-1-abc.jsonl"]
PATTERNS = [("*/*.json", False), ("**/*.json", True), ("**/*.jsonl", True), ("*", False), ("*/", False),
            ("s/**/*.traj.json", True), (glob.escape("q[1]") + "/*.json", False), ("a/b/c.json", False),
            ("a/b/", False), ("**", True), ("*/*/", False), ("a/*/d/*.jsonl", False), ("missing/*.json", False),
            ("chats/*/*/store.db", False), ("sessions/*/*/*/rollout-*abc.jsonl", False), (".*/*.json", False),
            ("*/*/*/", False), ("a/**/", True), ("*/b/*.json", False), ("**/b/c.json", True),
            ("s/**/u/*.json", True), ("*/c.json/*", False), ("**/*/", True)]


def make_tree(root: str, paths: list[str]) -> None:
    for path in paths:
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        open(os.path.join(root, path), "w").close()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(TREE), unique=True), st.booleans())
def test_glob_answers_as_the_standard_one(tmp_path_factory, paths, with_link):
    root = str(tmp_path_factory.mktemp("tree"))
    make_tree(root, paths)
    if with_link and os.path.isdir(os.path.join(root, "a")):
        os.symlink(os.path.join(root, "a"), os.path.join(root, "linked"))
    for pattern, recursive in PATTERNS:
        full = os.path.join(glob.escape(root), pattern)
        assert sorted(storefs.glob(full, recursive=recursive)) == sorted(glob.glob(full, recursive=recursive)), pattern


def settled(path: str) -> None:
    """An mtime old enough to be relied on (a fresh one is noted as unknown, which never holds)."""
    os.utime(path, (1_000_000_000, 1_000_000_000))


def watched(call) -> list:
    witness = storefs.Witness()
    with storefs.watching(witness):
        call()
    return witness.state()


def test_a_listing_through_the_layer_notices_an_added_file(tmp_path):
    make_tree(str(tmp_path), ["store/one.json"])
    settled(tmp_path / "store")
    for call in (lambda: storefs.listdir(tmp_path / "store"), lambda: storefs.glob(f"{tmp_path}/store/*.json")):
        state = watched(call)
        assert storefs.holds(state)
        (tmp_path / "store" / "two.json").write_text("")
        assert not storefs.holds(state)
        os.remove(tmp_path / "store" / "two.json")
        settled(tmp_path / "store")


def test_a_probe_and_a_read_are_noted(tmp_path):
    make_tree(str(tmp_path), ["store/one.json"])
    missing, read = tmp_path / "elsewhere" / "beside.json", tmp_path / "store" / "one.json"
    settled(read)
    state = watched(lambda: (storefs.exists(missing), os.close(storefs.open_read(read))))
    assert storefs.holds(state)
    read.write_text("grown")
    settled(read)  # the same mtime as before: the size still tells
    assert not storefs.holds(state)
    state = watched(lambda: storefs.exists(missing))
    make_tree(str(tmp_path), ["elsewhere/beside.json"])
    assert not storefs.holds(state)


def test_calls_outside_the_layer_or_another_thread_are_not_noted(tmp_path):
    make_tree(str(tmp_path), ["store/one.json"])
    assert watched(lambda: (os.listdir(tmp_path / "store"), glob.glob(f"{tmp_path}/store/*"))) == [[], [], []]
    assert storefs.listdir(tmp_path / "store") == ["one.json"]  # unwatched: answered, nothing kept


def _names_of(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def program_modules() -> dict[str, ast.AST]:
    return {name: ast.parse(open(path, encoding="utf-8").read()) for name, path in module_files(ROOT).items()}


def test_nothing_replaces_a_function_of_os_or_builtins():
    replaced = []
    for name, tree in program_modules().items():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in (t for each in targets for t in (each.elts if isinstance(each, ast.Tuple) else [each])):
                if isinstance(target, ast.Attribute) and _names_of(target.value) in ("os", "os.path", "builtins", "glob"):
                    replaced.append((name, _names_of(target)))
            if isinstance(node, ast.Call) and _names_of(node.func) == "setattr" and node.args and \
                    _names_of(node.args[0]) in ("os", "os.path", "builtins", "glob"):
                replaced.append((name, "setattr"))
    assert replaced == []


# Reads of a store that bypass the layer (and so are never noted); the allowed ones are not of a store.
BYPASSING = {"os.stat", "os.lstat", "os.listdir", "os.scandir", "os.readlink", "os.walk", "open", "io.open",
             "os.path.exists", "os.path.lexists", "os.path.isfile", "os.path.isdir", "os.path.islink",
             "os.path.getsize", "os.path.getmtime", "os.path.getctime", "os.path.getatime", "os.path.realpath",
             "os.path.samefile", "os.path.ismount", "os.open", "os.access", "os.fwalk", "glob.glob", "glob.iglob"}
ALLOWED = {("agents", "os.listdir"),  # the package lists its own modules, not a store
           ("agents.sqlite_ro", "os.open")}  # its lock and copies, in trajectoriz's own cache


def test_the_agents_read_their_stores_through_the_layer():
    bypassing = sorted({(name, _names_of(node.func)) for name, tree in program_modules().items()
                        if name.split(".")[0] == "agents" or name == "core.safepath"
                        for node in ast.walk(tree)
                        if isinstance(node, ast.Call) and _names_of(node.func) in BYPASSING} - ALLOWED)
    assert bypassing == []


def test_a_link_retargeted_on_the_way_of_a_realpath_is_noticed(tmp_path):
    """A link inside a link's target (config/projects -> via -> one): `via` is no component of
    the path asked about, yet retargeting it changes the answer (claude.roots drops a second
    configured folder that resolves to the first)."""
    make_tree(str(tmp_path), ["one/a.jsonl", "two/b.jsonl", "config/x"])
    os.symlink(tmp_path / "one", tmp_path / "via")
    os.symlink(tmp_path / "via", tmp_path / "config" / "projects")
    for folder in (tmp_path / "config", tmp_path):
        settled(folder)
    asked = tmp_path / "config" / "projects"
    state = watched(lambda: storefs.realpath(asked))
    assert storefs.realpath(asked) == str(tmp_path / "one") and storefs.holds(state)
    os.symlink(tmp_path / "two", tmp_path / "via.new")
    os.replace(tmp_path / "via.new", tmp_path / "via")
    settled(tmp_path)  # the folder's mtime as it was: only the link's own inode tells
    assert storefs.realpath(asked) == str(tmp_path / "two")
    assert not storefs.holds(state)


@given(st.lists(st.sampled_from(["a", "b", "l1", "l2", "..", ".", "loop", "gone"]), max_size=5))
@settings(max_examples=40, deadline=None)
def test_realpath_answers_as_the_standard_one(tmp_path_factory, parts):
    root = tmp_path_factory.mktemp("links")
    make_tree(str(root), ["a/b/f"])
    os.symlink("a/b", root / "l1")
    os.symlink(root / "l1", root / "a" / "l2")
    os.symlink("loop", root / "loop")
    os.symlink("missing", root / "gone")
    asked = os.path.join(str(root), *parts)
    assert watched(lambda: storefs.realpath(asked)) is not None
    assert storefs.realpath(asked) == os.path.realpath(asked)


def linked_folder(tmp_path):
    """store/ holding a link to a folder that is not there yet (as a user's linked project
    folder whose disk is not mounted); the store's folder settled."""
    make_tree(str(tmp_path), ["store/one.json"])
    os.symlink(tmp_path / "elsewhere", tmp_path / "store" / "linked")
    settled(tmp_path / "store")
    return tmp_path / "store"


def visible_folders(store) -> list:
    with storefs.scandir(store) as entries:  # as agents.base.visible_paths(folders=True)
        return [entry.name for entry in entries if entry.is_dir()]


def test_a_link_in_a_listed_folder_is_followed_to_its_target(tmp_path):
    """A folder's mtime tells which entries it has, not what a link among them leads to: the
    link's target appearing must be noticed by what asked through the link (a stat, a glob's
    `*/` or `**`, a listed entry's is_dir)."""
    store = linked_folder(tmp_path)
    calls = {"isdir": lambda: (storefs.listdir(store), storefs.isdir(store / "linked")),
             "glob */": lambda: storefs.glob(f"{store}/*/"),
             "glob **": lambda: storefs.glob(f"{store}/**/*.json", recursive=True),
             "entry.is_dir": lambda: visible_folders(store),
             "below the link": lambda: (storefs.listdir(store), storefs.isfile(store / "linked" / "two.json"))}
    states = {name: watched(call) for name, call in calls.items()}
    assert all(storefs.holds(state) for state in states.values())
    make_tree(str(tmp_path), ["elsewhere/two.json"])
    assert visible_folders(store) == ["linked"]
    assert [name for name, state in states.items() if storefs.holds(state)] == []
