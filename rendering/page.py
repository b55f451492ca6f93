"""A session as one HTML page a person reads (`trajectoriz show ID --html`, and `serve`'s session
page): built from the redacted ATIF document every other output serves, self-contained (its CSS
and script inline, nothing fetched), readable offline.

Every string of the document is untrusted (a session holds whatever its agent read), so every
one is escaped here, and the page carries a Content-Security-Policy (a <meta> in the file, a
header where `serve` sends it) that allows no script and no style but this module's own, by
their hashes: markup that escaped the escaping still would not run.

A long session's page opens quickly: a tool call is folded to one line (a <details> element),
and its arguments and output longer than INLINE_CHARS are kept as inert JSON data (a <script
type="application/json">, never executed) and put into the page as text when the call is opened.

Anchors: step N of the session is `#step-N`, step N of sub-agent S (`2`, `2.1` for a sub-agent's
own, as `search --content` numbers them) is `#step-S-N`; the numbers are those of `show --step`,
the cards and `search --content`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re

from atif.serialize import dumps_text
from rendering import cards
from rendering.transcript import content_text

INLINE_CHARS = 1500   # a call's arguments or output longer than this waits, as data, until it is opened
SUMMARY_CHARS = 160   # a folded call's one line
SYSTEM_CHARS = 240    # system text (what the harness injected) longer than this, or of 4 lines or more, is folded
DATA_ID = "trajectoriz-data"
WIDE = ' class="wide"'

_REFUSAL = re.compile(r"doesn't want to proceed with this tool use|user rejected|user denied|"
                      r"denied by the user|permission denied by|declined to run", re.I)

STYLE = """
:root{color-scheme:light dark;--fg:#1d1f21;--bg:#fff;--muted:#666;--line:#ddd;--user:#eef5ff;
--agent:#fff;--system:#f6f6f6;--bad:#b00020;--refused:#8a5a00;--code:#f4f4f4;--link:#0645ad}
@media (prefers-color-scheme:dark){:root{--fg:#ddd;--bg:#16181a;--muted:#999;--line:#333;
--user:#1b2633;--agent:#16181a;--system:#1f2123;--bad:#ff6b7d;--refused:#e0a84a;--code:#222;--link:#8ab4f8}}
body{font:15px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:60rem;padding:0 1rem 4rem}
a{color:var(--link)}
nav{display:flex;gap:1rem;flex-wrap:wrap;align-items:center;padding:.6rem 0;border-bottom:1px solid var(--line)}
nav form{display:flex;gap:.3rem;margin-left:auto}
h1{font-size:1.4rem;margin:1rem 0 .5rem;overflow-wrap:anywhere}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0 0 1rem}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
code,pre{font:13px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--code);padding:.5rem;margin:.3rem 0;max-height:40rem;overflow:auto}
.copy{user-select:all;background:var(--code);padding:0 .3rem}
.step{border-left:3px solid var(--line);padding:.3rem 0 .3rem .7rem;margin:.6rem 0;scroll-margin-top:.5rem}
.step.user{background:var(--user);border-color:#4a7fd0}.step.system{background:var(--system)}
.step.error{border-color:var(--bad)}
.head{font-size:.85rem;color:var(--muted)}.head a{color:inherit;text-decoration:none;font-weight:600}
.msg{white-space:pre-wrap;overflow-wrap:anywhere;margin:.2rem 0}
details{margin:.2rem 0}summary{cursor:pointer;overflow-wrap:anywhere}
details.call>summary code{font-size:12.5px}
.kind{display:inline-block;min-width:3.5rem;font-size:.75rem;color:var(--muted);text-transform:uppercase}
.bad{color:var(--bad);font-weight:600}.refused{color:var(--refused);font-weight:600}
details.subagent{border:1px solid var(--line);padding:.3rem .6rem;margin:.4rem 0}
.label{font-size:.75rem;color:var(--muted);margin-top:.3rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border-bottom:1px solid var(--line);padding:.25rem .4rem;text-align:left;vertical-align:top;white-space:nowrap}
td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:12rem}
body.wide{max-width:90rem}
form.filters{display:flex;flex-wrap:wrap;gap:.4rem;margin:.6rem 0}
.note{color:var(--muted)}
"""

SCRIPT = """(function(){
var data=null;
function text(i){if(data===null){var node=document.getElementById('%s');data=node?JSON.parse(node.textContent):[];}return data[i];}
function fill(d){var pres=d.querySelectorAll('pre[data-d]');for(var i=0;i<pres.length;i++){var p=pres[i];
if(p.closest('details')===d&&!p.hasAttribute('data-shown')){p.textContent=text(+p.getAttribute('data-d'));p.setAttribute('data-shown','');}}}
document.addEventListener('toggle',function(e){if(e.target.open)fill(e.target);},true);
function reveal(){var id=decodeURIComponent(location.hash.slice(1)),t=id&&document.getElementById(id);if(!t)return;
for(var p=t.parentElement;p;p=p.parentElement){if(p.tagName==='DETAILS'&&!p.open){p.open=true;fill(p);}}t.scrollIntoView();}
window.addEventListener('hashchange',reveal);reveal();
})();""" % DATA_ID


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def policy() -> str:
    """The Content-Security-Policy of every page: nothing from anywhere (`default-src 'none'`)
    but this module's own style and script, named by their hashes; images only as data: URLs
    (none are shown today); forms only to the page's own origin (serve's search)."""
    return (f"default-src 'none'; script-src {_digest(SCRIPT)}; style-src {_digest(STYLE)}; "
            f"img-src data:; base-uri 'none'; form-action 'self'")


def esc(value) -> str:
    """Text as HTML text or a quoted attribute's value: `& < > " '` escaped."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def shell(title: str, body: str, data: list | None = None, wide: bool = False) -> bytes:
    """A whole page around `body` (HTML made here, every untrusted string escaped): the policy as
    a <meta> (a file opened from disk gets no header), the style, the lazy data and the script."""
    data_block = ""
    if data:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                             ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
            text = text.replace(raw, escaped)
        data_block = f'<script type="application/json" id="{DATA_ID}">{text}</script>\n'
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(policy())}">\n'
            f'<meta name="referrer" content="no-referrer">\n'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">\n'
            f'<title>{esc(title)}</title>\n<style>{STYLE}</style></head>\n<body{WIDE if wide else ""}>\n{body}\n'
            f'{data_block}<script>{SCRIPT}</script>\n</body></html>\n')
    return page.encode("utf-8", "replace")


# the session page ----------------------------------------------------------------------------------
def render(doc: dict, nav: str = "") -> bytes:
    """The page of a document (`nav`: HTML of links above it, serve's; empty for a file)."""
    found = cards.facts(doc)
    data: list = []
    body = [nav, _header(doc, found), '<main id="steps">']
    subs = _subagents(doc)
    shown: set = set()
    body += [_step(step, "", subs, shown, data) for step in _steps(doc)]
    rest = [(path, sub) for path, sub in subs.values() if path not in shown]
    if rest:
        body.append('<h2>Sub-agents not linked from a step</h2>')
        body += [_subagent(path, sub, subs, shown, data) for path, sub in rest]
    body.append("</main>")
    title = found["title"] or (doc.get("extra") or {}).get("short_id") or "session"
    return shell(f"{title} — trajectoriz", "\n".join(body), data)


def _steps(trajectory: dict) -> list:
    return [s for s in trajectory.get("steps") or () if isinstance(s, dict)]


def _subagents(doc: dict) -> dict:
    """trajectory_id (or the path when it has none) -> (path, trajectory) of every sub-agent,
    nested ones included, numbered as `search --content` and `show --subagent` number them."""
    found = {}

    def walk(trajectory: dict, prefix: str) -> None:
        for i, sub in enumerate(trajectory.get("subagent_trajectories") or (), 1):
            if isinstance(sub, dict):
                path = f"{prefix}.{i}" if prefix else str(i)
                found.setdefault(sub.get("trajectory_id") or path, (path, sub))
                walk(sub, path)
    walk(doc, "")
    return found


def anchor(step_id, path: str = "") -> str:
    return f"step-{path}-{step_id}" if path else f"step-{step_id}"


def _header(doc: dict, found: dict) -> str:
    extra = doc.get("extra") or {}
    agent = doc.get("agent") or {}
    steps = _steps(doc)
    short_id = extra.get("short_id") or ""
    times = [s["timestamp"] for s in steps if isinstance(s.get("timestamp"), str)]
    commits = "".join(f'<li><code>{esc(c["hash"][:10])}</code> on {esc(c["branch"])}: {esc(c["subject"])} '
                      f'(<a href="#{anchor(c["step"], c["path"])}">step {esc(cards.where_short(c["step"], c["path"]))}</a>)</li>'
                      for c in found["commits"])
    outcome = found["outcome"]
    facts = [("Session", f"<code>{esc(short_id)}</code>" if short_id else ""),
             ("Agent", esc(" ".join(str(v) for v in (agent.get("name"), agent.get("version")) if v and v != "unknown"))),
             ("Model", esc(", ".join(found["models"]))),
             ("Started", esc(times[0]) if times else ""), ("Ended", esc(times[-1]) if len(times) > 1 else ""),
             ("Branch", esc(", ".join(branches(doc, found)))),
             ("Directory", f"<code>{esc(extra['cwd'])}</code>" if isinstance(extra.get("cwd"), str) else ""),
             ("Outcome", f'<span class="{"" if outcome == "completed" else "bad"}">{esc(outcome)}</span>'),
             ("Steps", f"{len(steps)}, {tool_call_count(doc)} tool call(s)"
                       + (f", {len(_subagents(doc))} sub-agent(s)" if doc.get("subagent_trajectories") else "")),
             ("Tokens", esc(tokens_line(doc.get("final_metrics") or {}) or "")),
             ("Commits", f"<ul>{commits}</ul>" if commits else ""),
             ("Files changed", esc(", ".join(f["path"] for f in found["files"][:30])
                                   + (f" (+{len(found['files']) - 30} more)" if len(found["files"]) > 30 else ""))),
             ("Warnings", "<br>".join(esc(w) for w in (extra.get("warnings") or [])[:10] if isinstance(w, str))),
             ("Continue it", f'<code class="copy">trajectoriz resume {esc(short_id)}</code> · '
                             f'<code class="copy">trajectoriz handoff {esc(short_id)} --to AGENT</code>' if short_id else "")]
    rows = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts if value)
    return f'<header><h1>{esc(found["title"] or "(no request)")}</h1><dl class="facts">{rows}</dl></header>'


def branches(doc: dict, found: dict | None = None) -> list[str]:
    """The git branches a session worked on: the one its agent recorded, and those of its commits."""
    extra = doc.get("extra") or {}
    named = [extra.get(k) for k in ("git_branch", "gitBranch", "branch")]
    named += [c["branch"] for c in (found or cards.facts(doc))["commits"]]
    names = [n for n in named if isinstance(n, str) and n]
    return sorted(set(names), key=names.index)


def tool_call_count(doc: dict) -> int:
    return sum(len(s.get("tool_calls") or ()) for s in _steps(doc))


def _step(step: dict, path: str, subs: dict, shown: set, data: list) -> str:
    source = step.get("source") if step.get("source") in ("user", "agent", "system") else "system"
    extra = step.get("extra") or {}
    heading = [f'<a href="#{anchor(step.get("step_id"), path)}">'
               f'{esc(cards.where_short(step.get("step_id"), path))}</a>', esc(source)]
    heading += [esc(v) for v in (extra.get("kind"), step.get("timestamp"), step.get("model_name")) if isinstance(v, str) and v]
    if step.get("is_copied_context"):
        heading.append("copied context")
    error = extra.get("kind") == "api_error"
    if error:
        heading.append('<span class="bad">✗ API error</span>')
    parts = [f'<div class="head">{" · ".join(heading)}</div>']
    if isinstance(step.get("reasoning_content"), str) and step["reasoning_content"].strip():
        parts.append(_folded("Reasoning", step["reasoning_content"], data, "reasoning"))
    message = content_text(step.get("message"))
    if message.strip():
        if source == "system" and (len(message) > SYSTEM_CHARS or message.count("\n") >= 3):  # harness text: folded
            parts.append(_folded(f"System text: {_one_line(message)}", message, data, "system"))
        else:
            parts.append(f'<div class="msg">{esc(message)}</div>')
    results = [r for r in (step.get("observation") or {}).get("results") or () if isinstance(r, dict)]
    calls = [c for c in step.get("tool_calls") or () if isinstance(c, dict)]
    ids = {c.get("tool_call_id") for c in calls}
    for call in calls:
        own = [r for r in results if r.get("source_call_id") == call.get("tool_call_id")]
        parts.append(_call(call, own, subs, shown, data))
    for result in results:
        if result.get("source_call_id") not in ids or not calls:
            parts.append(_result_block(result, subs, shown, data))
    kind = f"step {source}" + (" error" if error else "")
    return f'<section class="{kind}" id="{anchor(step.get("step_id"), path)}">{"".join(parts)}</section>'


def _one_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    words = " ".join(text.split())
    return words if len(words) <= limit else words[: limit - 1] + "…"


def _text_block(text: str, data: list) -> str:
    """A <pre> of `text`: inline when short, else empty with the index of its text in `data`."""
    if len(text) <= INLINE_CHARS:
        return f"<pre>{esc(text)}</pre>"
    data.append(text)
    return f'<pre data-d="{len(data) - 1}"></pre>'


def _folded(summary: str, text: str, data: list, kind: str) -> str:
    return f'<details class="{kind}"><summary>{esc(summary)}</summary>{_text_block(text, data)}</details>'


def _status(results: list) -> tuple[str, str]:
    """(CSS class, mark) of a call from its results: refused, failed (an error or a non-zero exit), or ''."""
    for result in results:
        text = content_text(result.get("content"))[:2000]
        if _REFUSAL.search(text):
            return "refused", "⊘ refused"
    for result in results:
        extra = result.get("extra") or {}
        code = extra.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return "bad", f"✗ exit {code}"
        if extra.get("is_error"):
            return "bad", "✗ failed"
    return "", ""


def _call(call: dict, results: list, subs: dict, shown: set, data: list) -> str:
    extra = call.get("extra") or {}
    kind = extra.get("kind") if isinstance(extra.get("kind"), str) else "other"
    name = call.get("function_name") if isinstance(call.get("function_name"), str) else "?"
    what = extra.get("command") if isinstance(extra.get("command"), str) else None
    if what is None and isinstance(extra.get("paths"), list) and extra["paths"]:
        what = " ".join(p for p in extra["paths"] if isinstance(p, str))
    if what is None:
        what = argument_line(call.get("arguments"))
    status, mark = _status(results)
    summary = (f'<span class="kind">{esc(kind)}</span> {esc(name)} <code>{esc(_one_line(what))}</code>'
               + (f' <span class="{status}">{esc(mark)}</span>' if mark else ""))
    arguments = call.get("arguments")
    body = ['<div class="label">Arguments</div>',
            _text_block(arguments if isinstance(arguments, str) else dumps_text(arguments or {}), data)]
    for result in results:
        body.append(_result_block(result, subs, shown, data, inside=True))
    if not results:
        body.append('<div class="label">No output recorded</div>')
    return f'<details class="call {status}"><summary>{summary}</summary>{"".join(body)}</details>'


def argument_line(arguments) -> str:
    if isinstance(arguments, dict):
        return " ".join(f"{k}={v if isinstance(v, str) else dumps_text(v)}" for k, v in arguments.items())
    return arguments if isinstance(arguments, str) else dumps_text(arguments) if arguments is not None else ""


def _result_block(result: dict, subs: dict, shown: set, data: list, inside: bool = False) -> str:
    text = content_text(result.get("content"))
    status, mark = _status([result])
    parts = []
    if text or not result.get("subagent_trajectory_ref"):
        label = "Output" + (f' <span class="{status}">{esc(mark)}</span>' if mark else "")
        if inside:
            parts += [f'<div class="label">{label}</div>', _text_block(text, data)]
        else:
            parts.append(f'<details class="call {status}"><summary><span class="kind">output</span> '
                         f'<code>{esc(_one_line(text))}</code>{" " + label if mark else ""}</summary>'
                         f'{_text_block(text, data)}</details>')
    for ref in result.get("subagent_trajectory_ref") or ():
        if not isinstance(ref, dict):
            continue
        found = subs.get(ref.get("trajectory_id"))
        if found is None:
            parts.append(f'<div class="note">Sub-agent {esc(ref.get("trajectory_id") or ref.get("session_id") or "")}'
                         f' (not recorded in this document)</div>')
        elif found[0] in shown:
            parts.append(f'<div class="note"><a href="#sub-{esc(found[0])}">Sub-agent {esc(found[0])}</a> (above)</div>')
        else:
            parts.append(_subagent(*found, subs, shown, data))
    return "".join(parts)


def _subagent(path: str, sub: dict, subs: dict, shown: set, data: list) -> str:
    """A sub-agent's steps, folded under one line, where its parent's call spawned it."""
    shown.add(path)
    steps = _steps(sub)
    agent = (sub.get("agent") or {}).get("name") or ""
    first = next((content_text(s.get("message")) for s in steps if s.get("source") == "user"), "")
    summary = (f'Sub-agent {esc(path)} · {esc(agent)} · {len(steps)} step(s)'
               + (f' · <span class="note">{esc(_one_line(first, 120))}</span>' if first.strip() else ""))
    inner = "".join(_step(step, path, subs, shown, data) for step in steps)
    return f'<details class="subagent" id="sub-{esc(path)}"><summary>{summary}</summary>{inner}</details>'


def tokens_line(fm: dict) -> str | None:
    """A session's token counts (and cost) from its `final_metrics`, in one line."""
    parts = []
    if fm.get("total_prompt_tokens") is not None:
        cached = fm.get("total_cached_tokens")
        parts.append(f"{fm['total_prompt_tokens']:,} prompt" + (f" ({cached:,} cached)" if cached is not None else ""))
    if fm.get("total_completion_tokens") is not None:
        parts.append(f"{fm['total_completion_tokens']:,} completion")
    if fm.get("total_cost_usd") is not None:
        parts.append(f"${fm['total_cost_usd']:.4f}")
    return ", ".join(parts) or None
