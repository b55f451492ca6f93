"""Reading Gemini API `Content` parts, shared by the Gemini CLI and Qwen Code translators.

Both agents store what they send to and receive from the model as Gemini `parts`: `{text}`
(with `thought: true` for reasoning), `{functionCall: {id, name, args}}`,
`{functionResponse: {id, name, response, parts?}}`, `{inlineData: {mimeType, data}}` and
`{fileData: {mimeType, fileUri}}`. Token counts are Gemini `usageMetadata`. This module turns
those shapes into ATIF pieces; it defines no `translate`, so it is not an agent.
"""

from __future__ import annotations

from agents.base import as_int, as_str
from atif.build import image_part, metrics, text_part
from atif.serialize import dumps_text


def parts_of(content) -> list[dict]:
    """A `PartListUnion` (a string, one part, or a list of strings and parts) as a list of parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        found = []
        for item in content:
            found.extend(parts_of(item))
        return found
    return []


def visible_text(parts: list[dict]) -> str:
    """The text the model said or was told: text parts that are not thoughts, joined."""
    return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str) and p["text"]
                     and not p.get("thought"))


def thought_text(parts: list[dict]) -> str:
    return "\n\n".join(p["text"] for p in parts if isinstance(p.get("text"), str) and p["text"]
                       and p.get("thought"))


def function_calls(parts: list[dict]) -> list[dict]:
    return [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]


def function_responses(parts: list[dict]) -> list[dict]:
    return [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]


def media_part(part: dict) -> dict | None:
    """An ATIF content part for an inline or referenced file, None for other parts."""
    inline = part.get("inlineData")
    if isinstance(inline, dict):
        return image_part(as_str(inline.get("mimeType")), data=as_str(inline.get("data")) or "",
                          label="inline data")
    referenced = part.get("fileData")
    if isinstance(referenced, dict):
        uri = as_str(referenced.get("fileUri"))
        return image_part(as_str(referenced.get("mimeType")), url=uri, label=f"file {uri or ''}".strip())
    return None


def message_content(parts: list[dict]):
    """A step message from user-side parts: a string when it is only text, else content parts
    (text and images) in order. Function responses and thoughts are not part of it."""
    pieces = []
    for part in parts:
        text = part.get("text")
        if isinstance(text, str):
            if text and not part.get("thought"):
                pieces.append(text_part(text))
            continue
        media = media_part(part)
        if media is not None:
            pieces.append(media)
    return _collapse(pieces)


def response_content(response: dict, extra_parts: list[dict] = ()) -> tuple[object, bool]:
    """The content of a tool result and whether the tool reported an error.

    `response` is a `functionResponse`: its `response` is usually `{output}` or `{error}`;
    anything else is kept as JSON. Media in `functionResponse.parts` and in sibling parts of
    the same result (`extra_parts`) become image parts after the text."""
    payload = response.get("response")
    is_error = False
    if isinstance(payload, dict):
        if isinstance(payload.get("output"), str):
            text = payload["output"]
        elif isinstance(payload.get("error"), str):
            text, is_error = payload["error"], True
        else:
            text = dumps_text(payload)
    elif isinstance(payload, str):
        text = payload
    elif payload is None:
        text = ""
    else:
        text = dumps_text(payload)
    pieces = [text_part(text)] if text else []
    for part in [*parts_of(response.get("parts")), *extra_parts]:
        if isinstance(part.get("text"), str) and part["text"]:
            pieces.append(text_part(part["text"]))
        else:
            media = media_part(part)
            if media is not None:
                pieces.append(media)
    return _collapse(pieces), is_error


def _collapse(pieces: list[dict]):
    if all(p["type"] == "text" for p in pieces):
        return "\n".join(p["text"] for p in pieces)
    return pieces


def usage_metrics(prompt, candidates, cached=None, thoughts=None, tool=None, total=None) -> dict | None:
    """ATIF metrics from Gemini-style counts.

    `prompt` includes the cached tokens. Gemini reports `thoughts` apart from `candidates`
    (total = prompt + candidates + thoughts + tool), while OpenAI-compatible backends converted
    by Qwen Code put reasoning inside `candidates` (total = prompt + candidates): the total
    says which, and completion counts every generated token once. `thoughts` and `tool` (the
    tool-use prompt tokens) are kept in `extra`."""
    prompt, candidates, cached = as_int(prompt), as_int(candidates), as_int(cached)
    thoughts, tool, total = as_int(thoughts), as_int(tool), as_int(total)
    completion = candidates
    if thoughts and not _reasoning_inside_candidates(prompt, candidates, tool, total):
        completion = (candidates or 0) + thoughts
    extra = {k: v for k, v in (("thoughts_tokens", thoughts), ("tool_tokens", tool)) if v}
    return metrics(prompt=prompt, completion=completion, cached=cached, extra=extra)


def _reasoning_inside_candidates(prompt, candidates, tool, total) -> bool:
    if total is None or prompt is None or candidates is None:
        return False
    return total == prompt + candidates + (tool or 0)
