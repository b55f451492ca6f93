"""`trajectoriz search` over a fake $HOME built from the fixture stores (tests/stores.py): the
query language, filters, scoping, paging, the exact markdown and JSON shapes, ids that compose
with `show` and the mount's file names, `--content` (which sees what the default mode cannot),
and exit codes."""

import json
import os
import re

import pytest

from discovery import catalog
from helpers import cli, run_main
from stores import PIPE_PROMPT, build_home


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_home(tmp_path_factory.mktemp("search"))


def run(store, *args, cwd=None):
    env, _ = store
    return run_main(env, args, cwd=cwd)


def found(store, *args, cwd=None) -> list[dict]:
    result = run(store, "search", "--json", *args, cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def sessions(store) -> list[dict]:
    """Every session, as `list` sees it: the reference the search results are checked against."""
    result = run(store, "list", "--all", "--json")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def scenario(record: dict) -> str:
    """The scenario id of a live session ("claude-2"), from its first message."""
    match = re.match(r"SCENARIO (\S+) in ", record["first_message"] or "")
    return match[1] if match else ""


# the query ------------------------------------------------------------------------------------------
def test_words_must_all_match_in_any_order_and_any_case(store):
    work = store[1]  # the folder of every project: its first search reads them all (issue 36)
    hits = found(store, "claude-2 NOTE.TXT", cwd=work)  # and the PIPECHECK copy of its request (stores.py),
    assert [scenario(h) for h in hits] == ["claude-2", ""]  # whose words are past its first message's cut:
    assert hits[1]["first_message"].startswith("PIPECHECK")  # every request is matched whole
    assert found(store, "note.txt claude-2") == hits
    assert found(store, "claude-2 nowhere-to-be-found") == []


def test_alternatives_are_separated_by_backslash_pipe(store):
    hits = found(store, r"claude-2 note.txt \| claude-3", cwd=store[1])
    assert sorted(scenario(h) for h in hits) == ["", "claude-2", "claude-3"]  # "": the PIPECHECK copy
    every = found(store, r"SCENARIO \| repository", "--limit", "0")   # more than a page
    expected = [r["id"] for r in sessions(store)
                if "scenario" in r["first_message"].lower() or "repository" in r["first_message"].lower()]
    assert [h["id"] for h in every] == expected and len(expected) >= 4


def test_regex(store):
    hits = found(store, "--regex", r"claude-[23] in /")
    assert sorted(scenario(h) for h in hits) == ["claude-2", "claude-3"]
    assert found(store, "--regex", r"^scenario claude-3\b") == [h for h in hits if scenario(h) == "claude-3"]


def test_ids_and_agent_names_match_too(store):
    everything = sessions(store)
    target = everything[-1]
    assert [h["id"] for h in found(store, target["id"])] == [target["id"]]
    assert [h["id"] for h in found(store, target["native_id"][:13])] == [target["id"]]
    claude = [r["id"] for r in everything if r["agent"] == "claude"]
    assert [h["id"] for h in found(store, "claude", "--limit", "0")] == [
        r["id"] for r in everything if r["agent"] == "claude" or "claude" in r["first_message"].lower()]
    assert set(claude) <= {h["id"] for h in found(store, "claude", "--limit", "0")}


# filters and paging ---------------------------------------------------------------------------------
def test_agent_since_and_until(store):
    everything = sessions(store)
    for agent in {r["agent"] for r in everything}:
        hits = found(store, "scenario", "--agent", agent)
        assert hits and all(h["agent"] == agent for h in hits)
    showcase = found(store, "repository")
    assert [h["date"] for h in showcase] == ["2026-06-15"]
    assert found(store, "repository", "--since", "2026-06-16") == []
    assert found(store, "repository", "--until", "2026-06-15") == showcase  # the whole day
    assert found(store, "repository", "--until", "2026-06-14") == []
    assert found(store, "repository", "--since", "2026-06-15T10:00:00+00:00",
                 "--until", "2026-06-15T10:00:02+00:00") == showcase
    late = found(store, "scenario claude", "--since", "2026-11-29")
    assert {scenario(h) for h in late} == {"claude-1", "claude-2", "claude-3"}
    assert found(store, "scenario claude", "--until", "2026-11-28") == []
    assert found(store, "scenario claude", "--since", "100000d") == found(store, "scenario claude")
    assert found(store, "scenario claude", "--since", "0d") == []  # every session started before now


def test_newest_first_limit_offset_and_the_note_about_more(store):
    everything = sessions(store)
    expected = [r["id"] for r in everything if "scenario" in r["first_message"].lower()]
    assert len(expected) >= 3
    assert [h["id"] for h in found(store, "scenario", "--limit", "0")] == expected
    started = [h["started"] for h in found(store, "scenario", "--limit", "0")]
    assert started == sorted(started, reverse=True)
    pages = [found(store, "scenario", "--limit", "2", "--offset", str(n)) for n in range(0, len(expected), 2)]
    assert [h["id"] for page in pages for h in page] == expected
    markdown = run(store, "search", "scenario", "--limit", "2").stdout.decode().splitlines()
    assert len([line for line in markdown if line.startswith("| `")]) == 2
    assert markdown[-1] == (f"{len(expected) - 2} more result(s) after row 2: add `--offset 2` for "
                            f"the next ones, or `--limit N` for more rows.")
    last_page = run(store, "search", "scenario", "--offset", str(len(expected) - 1)).stdout.decode()
    assert "more result(s)" not in last_page and last_page.count("| `") == 1


def test_default_is_at_most_50_rows(store, tmp_path):
    env, _ = store
    home = tmp_path / "many"
    projects = home / ".claude" / "projects" / "-many"
    projects.mkdir(parents=True)
    source = open(os.path.join(env["HOME"], ".claude", "projects", "-showcase",
                               "55550000-0000-4000-8000-000000000001.jsonl")).read()
    for n in range(53):
        native = f"55550000-0000-4000-8000-{n:012d}"
        (projects / f"{native}.jsonl").write_text(source.replace("55550000-0000-4000-8000-000000000001", native))
    result = run_main({**env, "HOME": str(home)}, ["search", "repository"])
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "## Search: `repository` — 53 result(s)"
    assert len([line for line in lines if line.startswith("| `")]) == 50
    assert lines[-1].startswith("3 more result(s) after row 50: add `--offset 50`")


# scoping --------------------------------------------------------------------------------------------
def test_everywhere_by_default_local_and_dir_narrow_it(store):
    env, work = store
    everywhere = {scenario(h) for h in found(store, "scenario claude")}
    assert everywhere == {"claude-1", "claude-2", "claude-3"}
    local = found(store, "scenario claude", "--local", cwd=os.path.join(work, "proj-claude", "src"))
    assert {scenario(h) for h in local} == {"claude-1", "claude-2"}
    other = found(store, "scenario", "--dir", os.path.join(work, "proj-claude-other"))
    assert [scenario(h) for h in other] == ["claude-3"]
    # proj-claude-other and proj-claude-pipe share proj-claude's prefix but are not inside it
    pipe = found(store, "pipecheck", "--dir", os.path.join(work, "proj-claude-pipe"))
    assert len(pipe) == 1
    assert found(store, "pipecheck", "--dir", os.path.join(work, "proj-claude")) == []
    assert found(store, "pipecheck", "--local", cwd=os.path.join(work, "proj-claude", "src")) == []


# shapes ---------------------------------------------------------------------------------------------
def project_cell(cwd: str) -> str:
    return cwd if len(cwd) <= 40 else "…" + cwd[-39:]


def test_markdown_shape_escapes_pipes_and_cuts_long_text(store):
    result = run(store, "search", "tokens per trajectory")
    assert result.returncode == 0
    (record,) = found(store, "tokens per trajectory")
    lines = result.stdout.decode().splitlines()
    title = " ".join(record["first_message"].split())
    assert title.startswith(PIPE_PROMPT) and len(title) > 80
    cut = (title[:79] + "…").replace("|", "\\|")
    assert lines == [
        "## Search: `tokens per trajectory` — 1 result(s)",
        "",
        "| ID | Agent | Date | Project | Title |",
        "|---|---|---|---|---|",
        f"| `{record['id']}` | claude | 2026-11-29 | {project_cell(record['cwd'])} | {cut} |",
    ]
    local = run(store, "search", "--dir", record["cwd"], "tokens per trajectory").stdout.decode()
    assert "| ID | Agent | Date | Title |" in local  # one project: no Project column


def test_no_result_prints_the_header_and_exits_1(store):
    result = run(store, "search", "nothing like this anywhere")
    assert result.returncode == 1
    assert result.stdout.decode() == "## Search: `nothing like this anywhere` — 0 result(s)\n"
    assert run(store, "search", "--json", "nothing like this anywhere").stdout == b""


def test_json_records(store):
    (record,) = found(store, "claude-3")
    listed = {r["id"]: r for r in sessions(store)}[record["id"]]
    assert set(record) == {"id", "agent", "date", "started", "native_id", "cwd", "model",
                           "title", "first_message", "file", "source", "archived", "shared_by", "branch", "branches"}
    assert record == {k: listed[k] for k in record}


def test_ids_compose_with_show_and_the_mount_file_names(store, tmp_path):
    env, _ = store
    hits = found(store, "scenario \\| repository", "--limit", "0")
    exported = cli("export", "--all", "--out", str(tmp_path / "memory"), env=env)
    assert exported.returncode == 0
    names = os.listdir(tmp_path / "memory")
    every = catalog.discover(env)
    for hit in hits:
        session = catalog.find(every, hit["id"])
        assert hit["file"] == catalog.file_name(session)
        card = hit["file"].replace(".atif.json", ".card.md")
        transcript = hit["file"].replace(".atif.json", ".transcript.md")
        assert sorted(n for n in names if hit["id"] in n) == sorted([hit["file"], card, transcript])  # ls memory | grep ID
        shown = run_main(env, ["show", hit["id"]])
        assert json.loads(shown.stdout)["extra"]["short_id"] == hit["id"]
        assert shown.stdout == (tmp_path / "memory" / hit["file"]).read_bytes()


# --content ------------------------------------------------------------------------------------------
def searched_text(step: dict) -> str:
    """What --content looks at in a step, as JSON text: enough to tell whether a word is there."""
    return json.dumps([step.get(k) for k in ("message", "reasoning_content", "tool_calls", "observation")])


def steps_holding(doc: dict, word: str, path: str = ""):
    for step in doc["steps"]:
        if word.lower() in searched_text(step).lower():
            yield step["step_id"], path or None
    for i, sub in enumerate(doc.get("subagent_trajectories", []), 1):
        yield from steps_holding(sub, word, f"{path}.{i}" if path else str(i))


def test_a_tool_output_is_found_by_content_only(store):
    """The live scenarios list their directory (`ls` prints README.md) and no prompt mentions
    README: the default mode finds nothing, --content --system finds exactly the steps whose
    documents hold it, mostly in tool outputs; without --system, all but the steps of source
    system that the agents wrote for themselves (Codex's base instructions, Gemini's session
    context, system prompts, Droid's reminders), which the count line counts."""
    env, _ = store
    default = run(store, "search", "README.md")
    assert default.returncode == 1
    every = run(store, "search", "--content", "--json", "--system", "README.md", "--limit", "0")
    assert every.returncode == 0, every.stderr
    hits = [json.loads(line) for line in every.stdout.splitlines()]
    documents = {r["id"]: json.loads(run_main(env, ["show", r["id"]]).stdout) for r in sessions(store)}
    expected = [(id_, step, path) for id_, doc in documents.items() for step, path in steps_holding(doc, "README.md")]
    assert [(h["id"], h["step"], h["subagent"]) for h in hits] == expected
    outputs = {h["id"] for h in hits if h["field"] == "output"}
    assert len(outputs) >= 3
    for hit in hits:
        assert set(hit) == {"id", "agent", "date", "step", "subagent", "jq", "field", "snippet", "file",
                            "transcript", "line"}
        assert "readme.md" in hit["snippet"].lower() and hit["snippet"].startswith(hit["field"] + ": ")
    for hit in hits[:8]:  # the jq path printed is the step numbered: one numbering everywhere
        assert at_jq_path(documents[hit["id"]], hit["jq"])["step_id"] == hit["step"]
        lines = run_main(env, ["show", hit["id"], "--markdown"]).stdout.decode().split("\n")  # the transcript's bytes
        label = f"{hit['subagent']}:{hit['step']}" if hit["subagent"] else str(hit["step"])
        assert hit["transcript"] == hit["file"].replace(".atif.json", ".transcript.md")
        assert lines[hit["line"] - 1].startswith(f"## {label} · ")
    for hit in [h for h in hits if h["field"] == "output" and not h["subagent"]][:5]:
        step = json.loads(run_main(env, ["show", hit["id"], "--step", str(hit["step"])]).stdout)
        outputs = [r.get("content") for r in step.get("observation", {}).get("results", [])]
        assert any("README.md" in json.dumps(o) for o in outputs)
    content = run(store, "search", "--content", "--json", "README.md", "--limit", "0")
    kept = [json.loads(line) for line in content.stdout.splitlines()]
    assert kept == [h for h in hits if at_jq_path(documents[h["id"]], h["jq"])["source"] != "system"]
    left = [h for h in hits if h not in kept]
    assert {at_jq_path(documents[h["id"]], h["jq"])["extra"]["kind"] for h in left} == {
        "base_instructions", "session_context", "system_prompt", "reminder"}
    assert content.stderr.decode().splitlines()[-1].startswith(
        f"{len(left)} result(s) in steps the agents wrote for themselves (instructions, injected context) left out")


def at_jq_path(doc: dict, path: str):
    """What a jq path of the form `.a[0].b[1]` names in a document."""
    found = doc
    for name, index in re.findall(r"\.(\w+)\[(\d+)\]", path):
        found = found[name][int(index)]
    return found


def test_content_matches_per_step_with_snippets_and_sub_agents(store):
    env, _ = store
    result = run(store, "search", "--content", "survey src/web")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    sessions_count = len(sessions(store))
    assert lines[:4] == [f"## Search: `survey src/web` — content of {sessions_count} session(s)", "",
                         "| ID | Agent | Date | Project | Steps | Snippet |", "|---|---|---|---|---|---|"]
    rows = [line for line in lines if line.startswith("| `")]
    (hit_id,) = {row.split("`")[1] for row in rows}
    headers = {line.split(" · ")[0][3:]: n for n, line in
               enumerate(run_main(env, ["show", hit_id, "--markdown"]).stdout.decode().split("\n"), 1)
               if line.startswith("## ")}
    name = next(r["file"] for r in sessions(store) if r["id"] == hit_id).replace(".atif.json", ".transcript.md")
    # one row per session: its best hit (both words as whole words in one field; the first of
    # equals) with its transcript's line (`sed -n` reads around it), then the other hits' steps
    assert [row.split(" | ")[4] for row in rows] == [f"5 (`.steps[4]`, `{name}:{headers['5']}`); also sub-agent 1: 1"]
    # the snippet: where the words are, then up to 50 characters before and 80 after them
    assert rows[0].endswith("| call: …web module subagent_type: general-purpose prompt: Survey src/web "
                            "and report its layout, with a screenshot. |")
    assert lines[-1] == "2 result(s) in 1 session(s)."
    (hit_id,) = {row.split("`")[1] for row in rows}
    step = json.loads(run_main(env, ["show", hit_id, "--subagent", "1", "--step", "1"]).stdout)
    assert step["message"].startswith("Survey src/web")


def test_content_regex_offset_limit_and_the_count(store):
    """--limit and --offset count sessions (rows); --json gives every hit of each."""
    hits = [json.loads(line) for line in
            run(store, "search", "--content", "--json", "--regex", r"hello-claude-\d", "--limit", "0").stdout.splitlines()]
    ids = list(dict.fromkeys(h["id"] for h in hits))
    assert len(hits) > 6 and len(ids) >= 4
    page = [json.loads(line) for line in
            run(store, "search", "--content", "--json", "--regex", r"hello-claude-\d",
                "--offset", "1", "--limit", "2").stdout.splitlines()]
    assert page == [h for h in hits if h["id"] in ids[1:3]]
    markdown = run(store, "search", "--content", "--regex", r"hello-claude-\d", "--limit", "2")
    lines = markdown.stdout.decode().splitlines()
    assert [line.split("`")[1] for line in lines if line.startswith("| `")] == ids[:2]
    assert lines[-3:] == [f"{len(hits)} result(s) in {len(ids)} session(s).", "",
                          f"{len(ids) - 2} more session(s) after row 2: add `--offset 2` for the next "
                          f"ones, or `--limit N` for more rows."]


def test_content_without_hits_exits_1(store):
    result = run(store, "search", "--content", "zyzzyva-not-here")
    assert result.returncode == 1
    assert result.stdout.decode().splitlines()[-1] == "0 result(s) in 0 session(s)."


# errors -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,message", [
    (["--regex", "(unclosed"], "--regex '(unclosed'"),
    (["   "], "the query is empty"),
    (["x", "--since", "last tuesday"], "--since 'last tuesday': expected YYYY-MM-DD"),
    (["x", "--agent", "nope"], "unknown agent 'nope'"),
    (["x", "--limit", "-1"], "--limit and --offset take a number >= 0"),
    (["x", "--dir", "/no/such/dir"], "--dir /no/such/dir: no such directory"),
    (["x", "--local", "--dir", "/tmp"], "not allowed with argument"),
])
def test_errors_exit_2_with_one_line(store, args, message):
    env, _ = store
    result = cli("search", *args, env=env)  # a real process: its exit status and stderr
    assert result.returncode == 2
    assert message in result.stderr.decode() and b"Traceback" not in result.stderr


def test_default_mode_reads_no_session_beyond_the_catalog(store, monkeypatch, tmp_path):
    """Default search answers from discovery's cached scan: translating any session fails here,
    and the search still answers (and --content, which must translate, reports the failure
    in the documents it searched)."""
    import agents

    def refuse(session, env):
        raise AssertionError("default search translated a session")

    everything = sessions(store)
    store = ({**store[0], "XDG_CACHE_HOME": str(tmp_path)}, store[1])  # keep the failures to itself
    for name in agents.names():
        monkeypatch.setattr(agents.load(name), "translate", refuse)
    assert len(found(store, "scenario")) >= 3
    failed = [json.loads(line) for line in
              run(store, "search", "--content", "--json", "--limit", "0",
                                       "default search translated").stdout.splitlines()]
    assert len(failed) == len(everything)


def test_content_output_is_the_same_on_one_core(store, monkeypatch):
    from core import parallel

    args = ("search", "--content", "--regex", r"note\.txt|hello", "--limit", "0")
    on_every_core = run(store, *args)
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    on_one = run(store, *args)
    assert on_one.stdout == on_every_core.stdout and on_one.stdout.count(b"\n| `") >= 20


def test_a_repeated_word_search_reads_the_kept_texts_without_a_pool(store, monkeypatch):
    """The profile of a warm `search --content` over 1,000 sessions: a pool of workers started
    to read search texts that were all kept. Once every one is kept, none is started, and the
    output is the first run's."""
    from core import parallel

    args = ("search", "--content", "note.txt \\| hello", "--limit", "0")
    first = run(store, *args)
    monkeypatch.setattr(parallel, "_pool", lambda *a: pytest.fail("a pool was started"))
    again = run(store, *args)
    assert again.stdout == first.stdout and again.stdout.count(b"\n| `") >= 20


def test_every_option_says_what_it_does():
    import argparse

    import trajectoriz

    parser = trajectoriz.build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in ("search", "stats", "show"):
        for action in commands.choices[name]._actions:
            assert action.help and len(action.help) > 15, (name, action.dest)
