"""orjson, imported without the two standard modules it loads only to serialize their types.

When orjson's module starts, it imports `dataclasses` (for its `_FIELD` marker) and `uuid` (for
the `UUID` class) so that it can serialize dataclass instances and UUIDs. trajectoriz serializes
neither, and the two imports, with `inspect`, `ast`, `dis`, `tokenize` and `platform` that they
pull in, cost a run about 9 ms: a tenth of a first `list`. So when neither is imported yet, they
are stood in for while orjson starts, and removed after: a later `import dataclasses` gets the
real module. What orjson keeps is its own: a UUID then is a type it cannot serialize (a
TypeError, as for any unknown type), and a dataclass with slots serializes as `{}`; trajectoriz
hands orjson dicts, lists and scalars only.
"""

from __future__ import annotations

import sys
import types

_STAND_INS = {"dataclasses": {"_FIELD": object()}, "uuid": {"UUID": type("UUID", (), {})}}


def _import_orjson():
    if "orjson" in sys.modules:
        return sys.modules["orjson"]
    placed = {}
    for name, attributes in _STAND_INS.items():
        if name not in sys.modules:
            module = types.ModuleType(name, "a stand-in while orjson starts (core/jsonlib.py)")
            module.__dict__.update(attributes)
            placed[name] = sys.modules[name] = module
    try:
        import orjson
    except Exception:  # an orjson that wants more of them: imported again, the ordinary way
        for name in ("orjson", "orjson.orjson"):
            sys.modules.pop(name, None)
        placed = _removed(placed)
        import orjson
    finally:
        _removed(placed)
    return orjson


def _removed(placed: dict) -> dict:
    for name, module in placed.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]
    return {}


orjson = _import_orjson()
