"""`trajectoriz search`: find a session, then read it (`show`, or the mount).

The default mode matches what discovery already knows (title, first message, ids, agent) and
every request the user typed (its document's facts, kept across runs: a session no run has read
yet is rendered first, on every core, for at most FACTS_SECONDS, so that even the first search on
a fresh cache sees every request; when every project is searched, only the current project's are
(a heavy user's other projects hold tens of thousands), the others' being matched by title and
first message until something reads them, which stderr says; after that it costs little more than
the cached catalog). `--content` matches inside every step of the documents the
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

import os
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
SNIPPET_WIDEST = 160  # characters between the first and the last word a snippet shows
SPANS_LOOKED_AT = 32  # occurrences of a word in a field weighed when placing a snippet
STEPS_LISTED = 12  # step numbers on a session's row beside its best hit's
TOKEN = re.compile(r'"([^"]*)"|(\S+)')  # a quoted phrase, or a word
FACTS_SECONDS = 5.0  # the longest a default search reads the sessions no run has read yet


class Query:
    """A query compiled once: alternatives of lower-cased needles (all of one alternative must
    occur in a step, a word anywhere in it, a quoted phrase as written inside one field), or
    one case-insensitive regular expression. `system`: whether the steps an agent wrote for
    itself (`own_step`) are searched too."""

    def __init__(self, text: str, regex: bool = False, phrase: bool = False, system: bool = False):
        self.text = text.strip()
        self.system = system
        self.every_snippet = True  # False: only each session's best hit needs one (`as_hits`)
        self.pattern = None
        self.alternatives: list[list[str]] = []
        if regex:
            try:
                self.pattern = re.compile(self.text, re.IGNORECASE)
            except re.error as exc:
                raise UserError(f"--regex {self.text!r}: {exc}") from None
        elif phrase:
            self.alternatives = [[self.text.lower()]] if self.text else []
        else:
            self.alternatives = [needles for needles in map(needles_of, self.text.split("\\|")) if needles]
        if not self.text or not (self.pattern or self.alternatives):
            raise UserError("the query is empty: give words to look for")
        self._spans = {needle: (whole_word(needle), re.compile(re.escape(needle), re.IGNORECASE))
                       for needles in self.alternatives for needle in needles}
        self._needles = [[searchtext.utf8(needle) for needle in needles] for needles in self.alternatives]
        self._one = self._needles[0][0] if [len(needles) for needles in self._needles] == [1] else None

    def matches(self, text: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(text) is not None
        lowered = text.lower()
        return any(all(needle in lowered for needle in needles) for needles in self.alternatives)

    def locate(self, fields: list[tuple[str, str]]) -> tuple | None:
        """How the query matches a step: (label, text, score, where) of the field to show, or
        None when the step does not match (fields taken together for words, each on its own for
        a phrase). For a regex: its first match, where = (start, end), score (1, 1); for words:
        the field holding the most words of the alternative that matched, whole words preferred
        (`No such file` is shown where `No` stands alone, not inside `Now`), score (words held,
        whole words), where = those words (`place` finds where they stand)."""
        if self.pattern is not None:
            for label, text in fields:
                found = self.pattern.search(text)
                if found:
                    return label, text, (1, 1), (found.start(), found.end())
            return None
        lowered = [text.lower() for _, text in fields]
        for needles in self.alternatives:
            if all(any(needle in text for text in lowered) for needle in needles):
                return self._best_field(needles, fields, lowered)
        return None

    def _best_field(self, needles: list[str], fields: list[tuple[str, str]], lowered: list[str]) -> tuple:
        best = None
        for (label, text), low in zip(fields, lowered):
            held = [needle for needle in needles if needle in low]
            score = (len(held), sum(1 for needle in held if self._spans[needle][0].search(text)))
            if held and (best is None or score > best[2]):
                best = (label, text, score, held)
        return best

    def place(self, found: tuple) -> tuple[str, str, int, int]:
        """(label, text, start, end) of `locate`'s answer: the shortest stretch of its field
        holding one occurrence of each word, whole ones preferred."""
        label, text, _, where = found
        if isinstance(where, tuple):
            return label, text, *where
        spans = [found for found in (self._occurrences(needle, text) for needle in where) if found]
        if not spans:  # lower() and re.IGNORECASE disagree on some rare letters
            return label, text, 0, 0
        return label, text, *shortest_cover(spans)

    def _occurrences(self, needle: str, text: str) -> list[tuple[int, int, bool]]:
        """(start, end, whole word) of a needle's first occurrences in a text: as a whole word
        when it stands so somewhere, else anywhere."""
        whole, anywhere = self._spans[needle]
        found = [(m.start(), m.end(), True) for m in islice(whole.finditer(text), SPANS_LOOKED_AT)]
        return found or [(m.start(), m.end(), False) for m in islice(anywhere.finditer(text), SPANS_LOOKED_AT)]

    def holds(self, step: bytes) -> bool:
        """Whether one step's `searchtext.lowered_text` matches (words only)."""
        return any(all(needle in step for needle in needles) for needles in self._needles)

    def count(self, text: bytes, begin: int = 0, end: int | None = None) -> int:
        """How many steps of a search text match, `text[begin:end]` being each step's
        `searchtext.lowered_text` followed by STEP_END: the steps `locate` finds, without
        decoding (a UTF-8 string is in another exactly when its bytes are). Words only."""
        end = len(text) if end is None else end
        if self._one is not None:
            return self._steps_holding(self._one, text, begin, end)
        if len(self._needles) == 1:
            return sum(1 for _ in self._step_ends(self._needles[0], text, begin, end))
        return len(set().union(*(self._step_ends(needles, text, begin, end) for needles in self._needles)))

    @staticmethod
    def _steps_holding(needle: bytes, text: bytes, begin: int, stop: int) -> int:
        """How many steps hold one needle: from each occurrence on to its step's end, then to
        the next occurrence (`bytes.find` skips what lies between as fast as memory is read;
        a regex would walk the rest of each step a byte at a time)."""
        find, count = text.find, 0
        at = find(needle, begin, stop)
        while at >= 0:
            count += 1
            end = find(searchtext.STEP_END, at + len(needle), stop)
            at = find(needle, end + 1, stop) if end >= 0 else -1
        return count

    @staticmethod
    def _step_ends(words: list[bytes], text: bytes, begin: int, stop: int):
        """Where each step holding all `words` ends, found from the occurrences of the longest
        word, each step looked at once (the rest of a step is skipped at its first one)."""
        longest = max(range(len(words)), key=lambda i: len(words[i]))
        first, rest = words[longest], words[:longest] + words[longest + 1:]
        find = text.find
        if any(find(word, begin, stop) < 0 for word in rest):  # a word nowhere: no step holds them all
            return
        pos = find(first, begin, stop)
        while pos >= 0:
            end = find(searchtext.STEP_END, pos, stop)
            end = stop if end < 0 else end
            start = max(begin, text.rfind(searchtext.STEP_END, begin, pos) + 1) if rest else pos
            if all(find(word, start, end) >= 0 for word in rest):
                yield end
            pos = find(first, end + 1, stop)


def needles_of(alternative: str) -> list[str]:
    """An alternative's words and quoted phrases, lower-cased: `"no such file" rm` is the
    phrase `no such file` and the word `rm`; a lone quote is a letter of its word."""
    return [(m[1] if m[1] is not None else m[2]).lower() for m in TOKEN.finditer(alternative)
            if m[1] or m[2]]


def whole_word(needle: str) -> re.Pattern:
    """The needle where it is not part of a longer word (bounded on the sides that are letters
    or digits: `note.txt` in `(note.txt)`, `no` in `No such`, not in `Now`)."""
    before = r"(?<!\w)" if re.match(r"\w", needle[:1]) else ""
    after = r"(?!\w)" if re.match(r"\w", needle[-1:]) else ""
    return re.compile(before + re.escape(needle) + after, re.IGNORECASE)


def shortest_cover(spans: list[list[tuple[int, int, bool]]]) -> tuple[int, int]:
    """(start, end) of the shortest stretch holding one occurrence of each needle, at most
    SNIPPET_WIDEST wide (past that, from the first needle on)."""
    best = None
    for start in sorted({found[0] for occurrences in spans for found in occurrences}):
        ends = [next((e for s, e, _ in occurrences if s >= start), None) for occurrences in spans]
        if None in ends:
            break
        if best is None or max(ends) - start < best[1] - best[0]:
            best = (start, max(ends))
    if best is None:  # overlapping needles: the first one's first occurrence
        best = spans[0][0][:2]
    return best[0], min(best[1], best[0] + SNIPPET_WIDEST)


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


HAPPENED = re.compile(r"error|abort|interrupt|command_output|shell_command|rollback|undo")


def own_step(step: dict) -> bool:
    """Whether a step is one an agent wrote for itself: a step of source `system` whose
    `extra.kind` the translator set (its prompt, base instructions, developer messages, skills,
    AGENTS.md and other injected context, reminders, meta records, summaries), unless that kind
    records what happened (an error, an interruption, a rollback, the output of a command the
    user ran) or the step holds a tool call or its output. trajectoriz's own notes (a session
    that could not be translated) have no kind."""
    if step.get("source") != "system" or step.get("tool_calls") or (step.get("observation") or {}).get("results"):
        return False
    kind = (step.get("extra") or {}).get("kind")
    return isinstance(kind, str) and bool(kind) and not HAPPENED.search(kind)


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


def document_steps(doc: dict, chosen: tuple[set, set] | None = None):
    """(step number, sub-agent path or "", `step_fields`, `own_step`) of every step of a
    document, its own steps first, then each sub-agent's: the order hits are printed in.
    `chosen`: only the steps at these positions among the other steps and among the own ones
    (`searchtext.matching_steps`)."""
    counted = [0, 0]
    for step_id, path, step in every_step(doc):
        own = own_step(step)
        if chosen is not None:
            counted[own] += 1
            if counted[own] - 1 not in chosen[own]:
                continue
        yield step_id, path, step_fields(step), own


def every_step(doc: dict, path: str = ""):
    """(step number, sub-agent path or "", step) of every step of a document, in order."""
    for step in doc.get("steps") or ():
        yield step.get("step_id"), path, step
    for i, sub in enumerate(doc.get("subagent_trajectories") or (), 1):
        yield from every_step(sub, f"{path}.{i}" if path else str(i))


def matching(steps, query: Query, own: bool = False):
    """(step number, sub-agent path, `Query.locate`'s answer) of the steps that match: the
    agent's own steps with `query.system`, or, with `own`, only those."""
    for step_id, path, fields, mine in steps:
        if (mine == own or query.system) and fields:
            found = query.locate(fields)
            if found:
                yield step_id, path, found


def hits_of(doc: dict, query: Query, chosen: tuple[set, set] | None = None) -> list[tuple]:
    """(step number, sub-agent path or "", label, snippet, score, transcript line) of every
    matching step of a document (`as_hits`); `chosen` as for `document_steps`, when the search
    text told."""
    return as_hits(list(matching(document_steps(doc, chosen), query)), query, doc)


def as_hits(found: list, query: Query, doc: dict) -> list[tuple]:
    """`matching`'s answers as hits. A snippet costs most of a hit: without
    `query.every_snippet` (a row per session), only the best hit (the highest score, the first
    of equals) has one, the others None. Each hit ends with the line of its step's header in
    the session's transcript (`transcript.step_lines`), so that `sed -n` reads around it."""
    from rendering import transcript

    best = None if query.every_snippet else max(range(len(found)), key=lambda i: found[i][2][2], default=None)
    lines = transcript.step_lines(doc) if found else {}
    return [(step_id, path, where[0], snippet(*query.place(where)) if best in (None, i) else None, where[2],
             lines.get(transcript.label(step_id, path)))
            for i, (step_id, path, where) in enumerate(found)]


def search_session(session, env, query: Query, keep: int | None, redact: bool, shown=None):
    """A pool worker's job: the session's hit count, how many hits in its own steps were left
    out, its hits (None when the parent will not print them), and the document's facts (so that
    `list` and `stats` need not translate it again; `(stamp, packed)` when only packed). From
    its kept search text (`kept_search`) when there is one, else from the document, whose
    search text is then written. `keep`: how many matching sessions are printed (None: all)."""
    from rendering import documents

    taken = documents.stamps(session, env) if redact else (documents.cache_stamp(session, env, False), None)
    stamp, kept_as = taken
    found = kept_search(session, env, query, keep, shown, taken) if kept_as and query.pattern is None else None
    if found is not None:
        return found
    before = shown.value if shown is not None and keep is not None else None
    return searched_document(session, env, query, redact, before is None or before < keep, stamp, kept_as)


def kept_search(session, env, query: Query, keep: int | None, shown, taken: tuple, here: int | None = None,
                base: str | None = None) -> tuple | None:
    """`search_session`'s answer from a word search's packed search text, None when it is not
    kept. The document is read too when its hits may be printed: `shown` (`parallel.Shared`)
    holds how many matching sessions the parent has counted so far, at most those before this
    one. When that reaches `keep`, hits is None; so it is when it is still 0: the parent has
    none of the pool's results yet, and finds the first sessions' hits itself rather than a
    worker reading the documents of a whole chunk of sessions whose hits are mostly not
    printed. `taken`: the session's `documents.stamps`; `here`: run by the parent itself, which
    finds the hits of the sessions it prints, those from that position on (--offset); `base`:
    the cache folder, when known."""
    from rendering import documents

    stamp, kept_as = taken
    known = searchtext.stored_search_text(session, env, kept_as, query, base)
    if known is None:
        return None
    (count, left, packed), data = known
    before = shown.value if shown is not None and keep is not None else None
    wanted = before is None or (before > 0 if here is None else before >= here) and before < keep
    hits = (hits_of(documents.document(session, env, True, kept_as)[0], query, searchtext.matching_steps(data, query))
            if count and wanted else [])
    return count, left, hits if wanted or not count else None, (stamp, packed)


def searched_document(session, env, query: Query, redact: bool, wanted: bool,
                      stamp: list, kept_as: list | None) -> tuple[int, int, list | None, dict]:
    """`search_session`'s answer from the document, whose search text it keeps for next time."""
    from rendering import documents

    doc, data = documents.document(session, env, redact, kept_as)
    steps = list(document_steps(doc))
    facts = documents.totals(doc, data, stamp)
    texts = None
    if kept_as and "error" not in doc["extra"]:  # a failure may be passing: not kept, like the document
        texts = searchtext.store_search_text(session, env, kept_as, steps, facts, query)
    if query.pattern is None:
        others, own = texts or searchtext.split_texts(steps)
        count, left = query.count(others), query.count(own)
        if query.system:
            count, left = count + left, 0
        found = list(matching(steps, query)) if count and wanted else []
    else:
        found = list(matching(steps, query))
        count = len(found)
        left = 0 if query.system else sum(1 for _ in matching(steps, query, own=True))
    return count, left, as_hits(found, query, doc) if wanted or not count else None, facts


# which sessions -----------------------------------------------------------------------------------
def scoped(args, env) -> tuple[list, str | None]:
    """The sessions search and stats look at: every project unless --local or --dir, of one
    agent with --agent, started within --since/--until, newest first."""
    return scoped_in(args, env)[1:]


def scoped_in(args, env, check_settled: bool = False) -> tuple:
    """`scoped`'s sessions and project after the catalog they come from. `check_settled`:
    whether discovery stats the files of settled sources too (catalog.discover), so that the
    catalog knows every session's files, and `documents.stamps` needs neither to stat them
    again nor to load their translators."""
    args.all = not (getattr(args, "local", False) or getattr(args, "dir", None))
    found, sessions, project = basics.selected(args, env, check_settled=check_settled)  # renderings check
    since = when(getattr(args, "since", None), "--since")
    until = when(getattr(args, "until", None), "--until", end=True)
    if since is not None or until is not None:
        sessions = [s for s in sessions if s.started is not None
                    and (since is None or s.started >= since) and (until is None or s.started <= until)]
    return found, sessions, project


# the command --------------------------------------------------------------------------------------
def here(sessions: list, env) -> list:
    """Of an every-project search's sessions, those of the current project (the git work tree
    around the current directory): the ones its first search reads when no run has."""
    return catalog.Scope(catalog.project_root(os.getcwd()), env).filter(sessions)


def run_search(args, env) -> int:
    if args.regex and args.phrase:
        raise UserError("--regex and --phrase: give one")
    query = Query(args.query, args.regex, args.phrase, getattr(args, "system", False))
    query.every_snippet = bool(args.json)
    if args.limit < 0 or args.offset < 0:
        raise UserError("--limit and --offset take a number >= 0")
    if args.content:  # each session's files are stat'ed anyway, to check its search text
        found, sessions, project = scoped_in(args, env, check_settled=True)
        args.every_project = project is None  # the tables then say where each session ran
        return content_search(args, env, query, sessions, found)
    sessions, project = scoped(args, env)
    args.every_project = project is None  # the tables then say where each session ran
    from rendering import documents

    facts = documents.Facts(env)
    unread = facts.fill(sessions if project is not None else here(sessions, env), FACTS_SECONDS)
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
    unread_note(unread, sum(1 for s in sessions if facts.latest(s) is None) - len(unread))
    return 0 if found else 1


def unread_note(unread: list, elsewhere: int) -> None:
    """What the default search could only match by title and first message: sessions no run
    has read yet, past the bound of the first search on a fresh cache (the next reads them), and
    those of other projects (read by a search there, or `list --all --steps`)."""
    if unread:
        print(f"trajectoriz: {len(unread)} session(s) not read yet were matched by their title and first "
              f"message only: search again to match every request of theirs", file=sys.stderr)
    if elsewhere > 0:
        print(f"trajectoriz: {elsewhere} session(s) of other projects not read yet were matched by their title "
              f"and first message only (`trajectoriz list --all --steps` reads every session once)", file=sys.stderr)


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


def more_note(total: int, args, stream, unit: str = "result(s)") -> None:
    """The last line when rows were left out: how many, and the options that show them."""
    end = args.offset + args.limit if args.limit else total
    if end >= total:
        return
    text = (f"{total - end} more {unit} after row {end}: add `--offset {end}` for the next "
            f"ones, or `--limit N` for more rows.")
    if stream is sys.stdout:
        write(f"\n{text}\n")
    else:
        print(text, file=stream)


def content_search(args, env, query: Query, sessions: list, found=None) -> int:
    """One row per matching session (its best hit's snippet, the other hits' step numbers),
    or with --json one object per hit, streamed as sessions finish, in catalog order (newest
    session first, steps in order), so that the output is the same however many cores did the
    work. --limit and --offset count sessions."""
    from core import parallel
    from rendering import documents

    end = args.offset + args.limit if args.limit else None
    if not args.json:
        write(f"## Search: {code(query.text)} — content of {len(sessions)} session(s)\n")
    redact = not args.no_redact
    facts = documents.Facts(env, redact)
    progress = parallel.Progress(len(sessions), "searching")
    total = matched = left = printed = 0
    shown = parallel.Shared()
    work = kept_then_pooled(sessions, env, query, end, redact, shown, found, args.offset)
    try:
        for n, (count, mine, hits, totals) in enumerate(work):
            session = sessions[n]
            wanted = count and args.offset <= matched and (end is None or matched < end)
            if wanted and hits is None:  # left to this process
                hits = hits_of(documents.document(session, env, redact)[0], query)
            record_facts(facts, session, totals)
            if wanted:
                emit_session(session, hits, args, env, first_row=not (args.json or printed))
                printed += 1
            total, left = total + count, left + mine
            matched += 1 if count else 0
            shown.value = matched
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
    summary(total, matched, left, args)
    return 0 if total else 1


def record_facts(facts, session, totals) -> None:
    """Keep a searched document's facts: `totals`, or `(stamp, packed)` from a search text,
    decoded only when the facts of that stamp are not known yet."""
    if isinstance(totals, dict):
        if facts.get(session, totals["stamp"]) != totals:
            facts.put(session, totals)
        return
    stamp, packed = totals
    if facts.get(session, stamp) is None:
        found = searchtext.facts(packed)
        if found is not None:
            facts.put(session, {**found, "stamp": stamp})


def kept_then_pooled(sessions: list, env, query: Query, end: int | None, redact: bool, shown, known=None,
                     offset: int = 0):
    """`search_session`'s answers in the sessions' order: read here while the search text of
    each is kept (a repeated word search: reading them costs less than starting a pool of
    workers), then from a pool, from the first session whose text is missing on. `known`: the
    catalog, when it knows the sessions' files (their stat included); `offset`: how many
    matching sessions are not printed first."""
    from core import cache, parallel
    from rendering import documents

    base = cache.cache_dir(env)

    def stamps(session):
        return documents.stamps(session, env, *((known.known(session), known.stats) if known else ()))

    for n, session in enumerate(sessions):
        found = (kept_search(session, env, query, end, shown, stamps(session), here=offset, base=base)
                 if redact and query.pattern is None else None)
        if found is None:
            yield from parallel.ordered(search_session, sessions[n:], (env, query, end, redact, shown))
            return
        yield found


def emit_session(session, hits: list, args, env, first_row: bool) -> None:
    """A matching session: one object per hit with --json, else one row with its best hit (the
    most words of the query as whole words in one field; the first of equals), its transcript's
    file and line, and the other hits' step numbers."""
    from core.jsonlib import orjson
    from rendering import transcript

    name = transcript.transcript_name(catalog.file_name(session))
    if args.json:
        lines = []
        for step, path, label, text, _, line in hits:
            lines.append(orjson.dumps({
                "id": session.short_id, "agent": session.agent, "date": catalog.local_date(session),
                "step": step, "subagent": path or None, "jq": cards.jq_path(step, path), "field": label,
                "snippet": text, "file": catalog.file_name(session), "transcript": name, "line": line}) + b"\n")
        write(b"".join(lines))
        return
    if not hits:  # the document changed since its search text was counted
        return
    best = max(hits, key=lambda hit: hit[4])  # max keeps the first of equals
    step, path, _, text, _, line = best
    where = f"{step} (sub-agent {path}: `{cards.jq_path(step, path)}`" if path else f"{step} (`{cards.jq_path(step)}`"
    where += f", `{name}:{line}`)" if line else ")"
    others = [hit for hit in hits if hit is not best]
    if others:
        where += f"; also {step_numbers(others[:STEPS_LISTED])}"
        where += f", … ({len(hits)} steps in all)" if len(others) > STEPS_LISTED else ""
    row = [f"`{session.short_id}`", session.agent, catalog.local_date(session), *where_ran(session, args, env),
           where, cell(text, 240)]
    headers = ["ID", "Agent", "Date", *(["Project"] if args.every_project else []), "Steps", "Snippet"]
    heading = "\n" + table(headers, []) + "\n" if first_row else ""
    write(heading + "| " + " | ".join(row) + " |\n")


def step_numbers(hits: list) -> str:
    """`8, 12; sub-agent 1: 1, 3`: hits' step numbers, each sub-agent's apart."""
    paths: dict = {}
    for step, path, *_ in hits:
        paths.setdefault(path, []).append(str(step))
    return "; ".join(f"sub-agent {path}: {', '.join(steps)}" if path else ", ".join(steps)
                     for path, steps in paths.items())


def where_ran(session, args, env) -> list[str]:
    """The Project cell of a row, in a search of every project (none in a project's search)."""
    return [basics.project_cell(session, env)] if args.every_project else []


def summary(total: int, matched: int, left: int, args) -> None:
    """The count line, with the hits left out in the agents' own steps, then the note about more
    sessions."""
    mine = (f"; {left} more in steps the agents wrote for themselves (instructions, injected "
            f"context), left out: --system searches them too") if left else ""
    if not args.json:
        write(f"\n{total} result(s) in {matched} session(s){mine}.\n")
    elif mine:
        print(f"{left} result(s) in steps the agents wrote for themselves (instructions, injected "
              f"context) left out: --system searches them too.", file=sys.stderr)
    more_note(matched, args, sys.stderr if args.json else sys.stdout, "session(s)")
