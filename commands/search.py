"""`trajectoriz search`: find a session, then read it (`show`, or the mount).

The default mode matches what discovery already knows (title, first message, ids, agent) and
every request the user typed (its document's facts, kept across runs: a session no run has read
yet is rendered first, on every core, for at most FACTS_SECONDS, so that even the first search on
a fresh cache sees every request; after that it costs little more than the cached catalog). `--content` matches inside every step of the documents the
mount serves (messages, reasoning, tool calls and their outputs, sub-agents included), on every
core, printing hits as they come.

A query is words that must all occur (case-insensitive), `\\|` separating alternatives; or, with
`--regex`, a regular expression. It is compiled once, before any session is looked at.

The first content search of a document keeps its searchable text next to the cached document
(`rendering/searchtext.py`); a word search then reads that flat text instead of parsing the document,
and parses the document only for the hits it prints. A regex search (its case rules are not
`str.lower`'s) reads the documents.
"""

from __future__ import annotations

import re
import sys
from itertools import islice


from commands import basics
from commands.basics import write
from core.errors import UserError
from core.output import cell, table
from core.timespec import when
from discovery import catalog
from rendering import cards, searchtext
from rendering.transcript import content_text

SNIPPET_BEFORE, SNIPPET_AFTER = 50, 80
FACTS_SECONDS = 5.0  # the longest a default search reads the sessions no run has read yet


class Query:
    """A query compiled once: alternatives of lower-cased words (all of one alternative must
    occur), or one case-insensitive regular expression."""

    def __init__(self, text: str, regex: bool = False):
        self.text = text.strip()
        self.pattern = None
        self.alternatives: list[list[str]] = []
        if regex:
            try:
                self.pattern = re.compile(self.text, re.IGNORECASE)
            except re.error as exc:
                raise UserError(f"--regex {self.text!r}: {exc}") from None
        else:
            self.alternatives = [words for words in (alt.lower().split() for alt in self.text.split("\\|"))
                                 if words]
        if not self.text or not (self.pattern or self.alternatives):
            raise UserError("the query is empty: give words to look for")
        self._word_patterns = {word: re.compile(re.escape(word), re.IGNORECASE)
                               for words in self.alternatives for word in words}
        self._needles = [[searchtext.utf8(word) for word in words] for words in self.alternatives]
        one_word = self._needles[0][0] if [len(words) for words in self._needles] == [1] else None
        self._rest_of_step = (re.compile(re.escape(one_word) + b"[^" + searchtext.STEP_END + b"]*")
                              if one_word else None)

    def matches(self, text: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(text) is not None
        lowered = text.lower()
        return any(all(word in lowered for word in words) for words in self.alternatives)

    def locate(self, fields: list[tuple[str, str]]) -> tuple[str, str, int, int] | None:
        """Where the query matches a step (its fields taken together): (label, text, start, end)
        of the first occurrence of the regex, or of the first word of the alternative that
        matched; None when the step does not match."""
        if self.pattern is not None:
            for label, text in fields:
                found = self.pattern.search(text)
                if found:
                    return label, text, found.start(), found.end()
            return None
        lowered = "\n".join(text for _, text in fields).lower()
        for words in self.alternatives:
            if all(word in lowered for word in words):
                return self._first(words[0], fields)
        return None

    def count(self, text: bytes, begin: int = 0) -> int:
        """How many steps of a search text match, `text[begin:]` being each step's
        `searchtext.lowered_text` followed by STEP_END: the steps `locate` finds, without
        decoding (a UTF-8 string is in another exactly when its bytes are). Words only."""
        if self._rest_of_step is not None:  # one word: one match per step holding it, all in C
            return len(self._rest_of_step.findall(text, begin))
        if len(self._needles) == 1:
            return sum(1 for _ in self._step_ends(self._needles[0], text, begin))
        return len(set().union(*(self._step_ends(words, text, begin) for words in self._needles)))

    @staticmethod
    def _step_ends(words: list[bytes], text: bytes, begin: int):
        """Where each step holding all `words` ends, found from the occurrences of the longest
        word, each step looked at once (the rest of a step is skipped at its first one)."""
        longest = max(range(len(words)), key=lambda i: len(words[i]))
        first, rest = words[longest], words[:longest] + words[longest + 1:]
        find = text.find
        if any(find(word, begin) < 0 for word in rest):  # a word nowhere: no step holds them all
            return
        pos = find(first, begin)
        while pos >= 0:
            end = find(searchtext.STEP_END, pos)
            end = len(text) if end < 0 else end
            start = max(begin, text.rfind(searchtext.STEP_END, begin, pos) + 1) if rest else pos
            if all(find(word, start, end) >= 0 for word in rest):
                yield end
            pos = find(first, end + 1)

    def _first(self, word: str, fields: list[tuple[str, str]]) -> tuple[str, str, int, int]:
        for label, text in fields:
            found = self._word_patterns[word].search(text)
            if found:
                return label, text, found.start(), found.end()
        label, text = fields[0]  # lower() and re.IGNORECASE disagree on some rare letters
        return label, text, 0, 0


# what is searched ---------------------------------------------------------------------------------
def step_fields(step: dict) -> list[tuple[str, str]]:
    """The searchable text of a step, labelled by where it comes from; the same text `show`
    and the mount serve (arguments flattened to `key: value` lines)."""
    fields = []
    message = content_text(step.get("message"))
    if message:
        fields.append(("message", message))
    if step.get("reasoning_content"):
        fields.append(("reasoning", step["reasoning_content"]))
    for call in step.get("tool_calls") or ():
        fields.append(("call", f"{call.get('function_name', '')} {argument_text(call.get('arguments'))}"))
    for result in (step.get("observation") or {}).get("results") or ():
        text = content_text(result.get("content"))
        if text:
            fields.append(("output", text))
    return fields


def argument_text(arguments) -> str:
    if not isinstance(arguments, dict):
        return json_text(arguments)
    return "\n".join(f"{key}: {value if isinstance(value, str) else json_text(value)}"
                     for key, value in arguments.items())


def json_text(value) -> str:
    from core.jsonlib import orjson

    return orjson.dumps(value, default=str).decode() if value is not None else ""


def snippet(label: str, text: str, start: int, end: int) -> str:
    left, right = max(0, start - SNIPPET_BEFORE), min(len(text), end + SNIPPET_AFTER)
    piece = " ".join(text[left:right].split())
    return f"{label}: {'…' if left else ''}{piece}{'…' if right < len(text) else ''}"


def document_steps(doc: dict, path: str = ""):
    """(step number, sub-agent path or "", `step_fields`) of every step of a document, its own
    steps first, then each sub-agent's: the order hits are printed in."""
    for step in doc.get("steps") or ():
        yield step.get("step_id"), path, step_fields(step)
    for i, sub in enumerate(doc.get("subagent_trajectories") or (), 1):
        yield from document_steps(sub, f"{path}.{i}" if path else str(i))


def matching(steps, query: Query):
    """(step number, sub-agent path, `Query.locate`'s answer) of the steps that match."""
    for step_id, path, fields in steps:
        found = query.locate(fields) if fields else None
        if found:
            yield step_id, path, found


def hits_of(doc: dict, query: Query, keep: int | None) -> list[tuple]:
    """(step number, sub-agent path or "", label, snippet) of the first `keep` (None: all)
    matching steps of a document."""
    return [as_hit(*found) for found in islice(matching(document_steps(doc), query), keep)]


def as_hit(step_id, path: str, where: tuple) -> tuple:
    return step_id, path, where[0], snippet(*where)


def search_session(session, env, query: Query, keep: int | None, redact: bool, shown=None):
    """A pool worker's job: the session's hit count, its first `keep` hits, and the document's
    facts (so that `list` and `stats` need not translate it again). From its kept search text
    (`kept_search`) when there is one, else from the document, whose search text is then
    written."""
    from rendering import documents

    taken = documents.stamps(session, env) if redact else (documents.cache_stamp(session, env, False), None)
    stamp, kept_as = taken
    found = kept_search(session, env, query, keep, shown, taken) if kept_as and query.pattern is None else None
    if found is not None:
        return found
    before = shown.value if shown is not None and keep is not None else None
    return searched_document(session, env, query, keep, redact, before is None or before < keep, stamp, kept_as)


def kept_search(session, env, query: Query, keep: int | None, shown, taken: tuple) -> tuple | None:
    """`search_session`'s answer from a word search's packed search text, None when it is not
    kept. The document is read too when some of its hits may be printed: `shown`
    (`parallel.Shared`) holds how many hits the parent has counted so far, at most the hits of
    the sessions before this one. When that reaches `keep`, hits is None; so it is when it is
    still 0: the parent has none of the pool's results yet, and finds the first sessions' hits
    itself rather than a worker reading the documents of a whole chunk of sessions whose hits
    are mostly not printed. `taken`: the session's `documents.stamps`."""
    from rendering import documents

    stamp, kept_as = taken
    known = searchtext.stored_search_text(session, env, kept_as, query)
    if known is None:
        return None
    count, facts = known
    before = shown.value if shown is not None and keep is not None else None
    wanted = before is None or 0 < before < keep
    hits = hits_of(documents.document(session, env, True, kept_as)[0], query, keep) if count and wanted else []
    return count, hits if wanted or not count else None, {**facts, "stamp": stamp}


def searched_document(session, env, query: Query, keep: int | None, redact: bool, wanted: bool,
                      stamp: list, kept_as: list | None) -> tuple[int, list | None, dict]:
    """`search_session`'s answer from the document, whose search text it keeps for next time."""
    from rendering import documents

    doc, data = documents.document(session, env, redact, kept_as)
    steps = list(document_steps(doc))
    facts = documents.totals(doc, data, stamp)
    text = None
    if kept_as and "error" not in doc["extra"]:  # a failure may be passing: not kept, like the document
        text = searchtext.store_search_text(session, env, kept_as, steps, facts, query)
    if query.pattern is None:
        if text is None:
            text = searchtext.steps_text([searchtext.lowered_text(fields) for _, _, fields in steps])
        count = query.count(text)
        found = list(islice(matching(steps, query), keep if count and wanted else 0))
    else:
        everything = list(matching(steps, query))
        count, found = len(everything), everything[:keep if wanted else 0]
    return count, [as_hit(*where) for where in found] if wanted or not count else None, facts


# which sessions -----------------------------------------------------------------------------------
def scoped(args, env) -> tuple[list, str | None]:
    """The sessions search and stats look at: every project unless --local or --dir, of one
    agent with --agent, started within --since/--until, newest first."""
    args.all = not (getattr(args, "local", False) or getattr(args, "dir", None))
    _, sessions, project = basics.selected(args, env, check_settled=False)  # renderings check
    since = when(getattr(args, "since", None), "--since")
    until = when(getattr(args, "until", None), "--until", end=True)
    if since is not None or until is not None:
        sessions = [s for s in sessions if s.started is not None
                    and (since is None or s.started >= since) and (until is None or s.started <= until)]
    return sessions, project


# the command --------------------------------------------------------------------------------------
def run_search(args, env) -> int:
    query = Query(args.query, args.regex)
    if args.limit < 0 or args.offset < 0:
        raise UserError("--limit and --offset take a number >= 0")
    sessions, project = scoped(args, env)
    args.every_project = project is None  # the tables then say where each session ran
    if args.content:
        return content_search(args, env, query, sessions)
    from rendering import documents

    facts = documents.Facts(env)
    unread = facts.fill(sessions, FACTS_SECONDS)
    found = [(s, f) for s in sessions for f in (facts.latest(s),) if query.matches(listed_text(s, f))]
    shown = page(found, args.offset, args.limit)
    if args.json:
        from core.jsonlib import orjson

        records = [basics.listing_record(s, f) for s, f in shown]
        write(b"".join(orjson.dumps(record) + b"\n" for record in records))
        more_note(len(found), args, sys.stderr)
    else:
        heading = f"## Search: {code(query.text)} — {len(found)} result(s)\n"
        rows = [[f"`{s.short_id}`", s.agent, catalog.local_date(s), *where_ran(s, args, env),
                 cell(catalog.title(s, f), 80)] for s, f in shown]
        headers = ["ID", "Agent", "Date", *(["Project"] if args.every_project else []), "Title"]
        body = "\n" + table(headers, rows) + "\n" if found else ""
        write(heading + body)
        more_note(len(found), args, sys.stdout)
    unread_note(unread)
    return 0 if found else 1


def unread_note(unread: list) -> None:
    """What the default search could only match by title and first message: sessions no run
    has read yet, past the bound of the first search on a fresh cache (the next reads them)."""
    if unread:
        print(f"trajectoriz: {len(unread)} session(s) not read yet were matched by their title and first "
              f"message only: search again to match every request of theirs", file=sys.stderr)


def listed_text(session, facts: dict | None) -> str:
    """What the default search matches of a session: its title, its first message, every
    request its user typed (from its document's facts, when it was rendered once: nothing is
    parsed for it), its ids and its agent."""
    requests = facts.get("requests") or "" if facts else ""
    return (f"{catalog.title(session, facts)}\n{catalog.first_message(session)}\n{session.title}\n{requests}\n"
            f"{session.short_id}\n{catalog.shown_id(session)}\n{session.agent}")


def page(items: list, offset: int, limit: int) -> list:
    return items[offset: offset + limit] if limit else items[offset:]


def code(text: str) -> str:
    """Inline code that survives backticks in the text."""
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def more_note(total: int, args, stream) -> None:
    """The last line when rows were left out: how many, and the options that show them."""
    end = args.offset + args.limit if args.limit else total
    if end >= total:
        return
    text = (f"{total - end} more result(s) after row {end}: add `--offset {end}` for the next "
            f"ones, or `--limit N` for more rows.")
    if stream is sys.stdout:
        write(f"\n{text}\n")
    else:
        print(text, file=stream)


def content_search(args, env, query: Query, sessions: list) -> int:
    """Hits streamed as sessions finish, in catalog order (newest session first, steps in
    order), so the output is the same however many cores did the work."""
    from core import parallel
    from rendering import documents

    end = args.offset + args.limit if args.limit else None
    if not args.json:
        write(f"## Search: {code(query.text)} — content of {len(sessions)} session(s)\n")
    redact = not args.no_redact
    facts = documents.Facts(env, redact)
    progress = parallel.Progress(len(sessions), "searching")
    total = matched = printed = 0
    shown = parallel.Shared()
    work = kept_then_pooled(sessions, env, query, end, redact, shown)
    try:
        for n, (count, hits, totals) in enumerate(work):
            session = sessions[n]
            if hits is None and (end is None or total < end):  # left to this process
                hits = hits_of(documents.document(session, env, redact)[0], query, end)
            if facts.get(session, totals["stamp"]) != totals:
                facts.put(session, totals)
            for position, hit in enumerate(hits or (), total):
                if position >= args.offset and (end is None or position < end):
                    emit_hit(session, hit, args, env, first_row=not (args.json or printed))
                    printed += 1
            total += count
            shown.value = total
            matched += 1 if count else 0
            progress.step(f", {total} hit(s)")
    except KeyboardInterrupt:
        progress.clear()  # before the message, on the line the progress used
        print(f"trajectoriz: interrupted after {progress.done} of {len(sessions)} session(s)",
              file=sys.stderr)
        return 130
    finally:
        work.close()
        progress.clear()
        facts.save()
    summary(total, matched, args)
    return 0 if total else 1


def kept_then_pooled(sessions: list, env, query: Query, end: int | None, redact: bool, shown):
    """`search_session`'s answers in the sessions' order: read here while the search text of
    each is kept (a repeated word search: reading them costs less than starting a pool of
    workers), then from a pool, from the first session whose text is missing on."""
    from core import parallel
    from rendering import documents

    for n, session in enumerate(sessions):
        found = (kept_search(session, env, query, end, shown, documents.stamps(session, env))
                 if redact and query.pattern is None else None)
        if found is None:
            yield from parallel.ordered(search_session, sessions[n:], (env, query, end, redact, shown))
            return
        yield found


def emit_hit(session, hit: tuple, args, env, first_row: bool) -> None:
    from core.jsonlib import orjson

    step, path, label, text = hit
    if args.json:
        record = {"id": session.short_id, "agent": session.agent, "date": catalog.local_date(session),
                  "step": step, "subagent": path or None, "jq": cards.jq_path(step, path), "field": label,
                  "snippet": text, "file": catalog.file_name(session)}
        write(orjson.dumps(record) + b"\n")
        return
    where = f"{step} (sub-agent {path}: `{cards.jq_path(step, path)}`)" if path else f"{step} (`{cards.jq_path(step)}`)"
    row = [f"`{session.short_id}`", session.agent, catalog.local_date(session), *where_ran(session, args, env),
           where, cell(text, 240)]
    headers = ["ID", "Agent", "Date", *(["Project"] if args.every_project else []), "Step", "Snippet"]
    heading = "\n" + table(headers, []) + "\n" if first_row else ""
    write(heading + "| " + " | ".join(row) + " |\n")


def where_ran(session, args, env) -> list[str]:
    """The Project cell of a row, in a search of every project (none in a project's search)."""
    return [basics.project_cell(session, env)] if args.every_project else []


def summary(total: int, matched: int, args) -> None:
    if not args.json:
        write(f"\n{total} result(s) in {matched} session(s).\n")
    more_note(total, args, sys.stderr if args.json else sys.stdout)
