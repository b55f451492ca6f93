"""Damage to the fields of native records, one field at a time: for the fault corpus.

`field_mutations(home)` walks every native record of a store (JSONL lines, whole-file JSON,
the rows of SQLite tables and the JSON held in their text columns) and yields, for each distinct
field, mutations that put a value of another type there (a string where an object was, an
object where a number was, null, ...). Fields are told apart by their path, with list indices
folded and the record's kind (`type`/`role`/... values) kept, so a tool_use block's `input` and
a text block's `text` are different fields, but the 40th text block is the same field as the
first. `id_mutations(home)` removes, or makes identical, every id-like field of a kind.

Each mutation is applied to a copy of the store in place and undone with `Pristine.restore()`.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
from dataclasses import dataclass
from typing import Callable

KIND_KEYS = ("type", "role", "kind", "event", "name")
OTHER_TYPES = [None, 12345, -1, "text", True, 1.5, ["item"], {"key": "value"}, [], {}, ""]
ID_KEY = re.compile(r"(^|_|[a-z])(id|Id|ID|uuid|Uuid|UUID)$|^(id|uuid)$")


@dataclass
class Mutation:
    file: str
    field: str          # the field's path, for messages
    apply: Callable[[], None]


# reading and writing the native files ------------------------------------------------------------
def is_sqlite(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(16) == b"SQLite format 3\x00"


def read_records(path: str) -> tuple[str, list] | None:
    """("jsonl", records) or ("json", [document]) for a JSON text file; None otherwise."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (UnicodeDecodeError, OSError):
        return None
    try:
        return "json", [json.loads(text)]
    except ValueError:
        pass
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError:
                return None
    return ("jsonl", records) if records else None


def write_records(path: str, shape: str, records: list) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        if shape == "json":
            json.dump(records[0], handle)
        else:
            handle.write("".join(json.dumps(r) + "\n" for r in records))


def native_files(home: str) -> list[str]:
    """The JSON/JSONL and SQLite files under `home` (a SQLite store made a single file first, so
    that a mutation and its undo are one file's bytes)."""
    found = []
    for folder, _, names in os.walk(home):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(("-wal", "-shm", ".md")) or not os.path.isfile(path) or os.path.islink(path):
                continue
            if is_sqlite(path):
                settle_sqlite(path)
                found.append(path)
            elif read_records(path) is not None:
                found.append(path)
    return sorted(found)


def settle_sqlite(path: str) -> None:
    """Fold the WAL into the database and leave it in rollback-journal mode."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    for side in ("-wal", "-shm"):
        if os.path.exists(path + side):
            os.remove(path + side)


class Pristine:
    """The bytes of the native files before any mutation, to put back after each."""

    def __init__(self, files: list[str]):
        self.data = {}
        for path in files:
            with open(path, "rb") as handle:
                self.data[path] = handle.read()

    def restore(self, path: str) -> None:
        with open(path, "wb") as handle:
            handle.write(self.data[path])
        for side in ("-journal", "-wal", "-shm"):
            if os.path.exists(path + side):
                os.remove(path + side)


# walking values ------------------------------------------------------------------------------------
def fields(value, path=(), label=""):
    """(path, label) of every value inside `value`: `path` locates it, `label` names the field
    with list indices folded and the kinds of the enclosing objects kept."""
    if isinstance(value, dict):
        kind = next((f"{k}={value[k]}" for k in KIND_KEYS if isinstance(value.get(k), str)), "")
        here = f"{label}[{kind}]" if kind else label
        for key, item in value.items():
            yield path + (key,), f"{here}.{key}"
            yield from fields(item, path + (key,), f"{here}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield path + (index,), f"{label}[*]"
            yield from fields(item, path + (index,), f"{label}[*]")


def get_at(value, path):
    for key in path:
        value = value[key]
    return value


def set_at(value, path, new):
    """A deep copy of `value` with the value at `path` replaced."""
    copy = json.loads(json.dumps(value))
    if not path:
        return new
    get_at(copy, path[:-1])[path[-1]] = new
    return copy


def alternatives(value, rng: random.Random, count: int) -> list:
    """`count` values whose JSON type differs from `value`'s."""
    def type_of(v):
        return "number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
    others = [v for v in OTHER_TYPES if type_of(v) != type_of(value)]
    return rng.sample(others, min(count, len(others)))


# mutations -----------------------------------------------------------------------------------------
STORAGE_CLASSES = (None, 12345, "text", b"\x00\xffblob")   # what a SQLite column can hold


def field_mutations(home: str, per_field: int = 2, limit: int = 400, seed: int = 8) -> list[Mutation]:
    """Wrong-type mutations, each distinct field once (its first occurrence), `per_field` other
    JSON types each (a SQLite column: every other storage class); at most `limit` in all,
    sampled evenly when there are more."""
    rng = random.Random(seed)

    def choose(label: str, value, column: bool = False) -> list:
        if column:
            return [v for v in STORAGE_CLASSES if type(v) is not type(value)]
        return alternatives(value, rng, per_field)

    found = _mutations(home, choose)
    if len(found) > limit:
        found = [found[int(i * len(found) / limit)] for i in range(limit)]
    return found


def field_mutation(home: str, label: str, new) -> Mutation:
    """The one mutation that puts `new` in field `label` (as `Mutation.field` names it, without
    the value), at its first occurrence: a regression test's exact case."""
    found = _mutations(home, lambda found_label, _value, column=False: [new] if found_label == label else [])
    assert found, f"no field {label} in {home}"
    return found[0]


def _mutations(home: str, choose: Callable) -> list[Mutation]:
    found = []
    for path in native_files(home):
        if is_sqlite(path):
            found.extend(_sqlite_mutations(path, choose))
        else:
            found.extend(_text_mutations(path, choose))
    return found


def _text_mutations(path: str, choose: Callable) -> list[Mutation]:
    shape, records = read_records(path)
    lines = [json.dumps(r) + "\n" for r in records]
    found, seen = [], set()
    for index, record in enumerate(records):
        for where, label in fields(record):
            if label in seen:
                continue
            seen.add(label)
            for new in choose(label, get_at(record, where)):
                found.append(Mutation(path, f"{label} = {new!r}",
                                      _line_change(path, lines, index, record, where, new)))
    return found


def _line_change(path, lines, index, record, where, new) -> Callable[[], None]:
    """Rewrite the file with one record changed (built when applied: most are sampled out)."""
    def apply():
        changed = lines[:index] + [json.dumps(set_at(record, where, new)) + "\n"] + lines[index + 1:]
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("".join(changed))
    return apply


def _sqlite_mutations(path: str, choose: Callable) -> list[Mutation]:
    """For each column of each table: its value in the first row replaced, and each field of
    the JSON it holds (when it does), in the first row where that field occurs."""
    connection = sqlite3.connect(path)
    found, seen = [], set()
    for table in _tables(connection):
        key = _row_key(connection, table)
        names = [d[0] for d in connection.execute(f'SELECT * FROM "{table}" LIMIT 0').description]
        for row in connection.execute(f'SELECT {", ".join(key)}, * FROM "{table}" LIMIT 200').fetchall():
            rowid = dict(zip(key, row))
            for column, value in zip(names, row[len(key):]):
                if (table, column) not in seen:
                    seen.add((table, column))
                    for new in choose(f"{table}.{column}", value, column=True):
                        found.append(Mutation(path, f"{table}.{column} = {new!r}",
                                              _row_update(path, table, column, rowid, new)))
                document = _json_of(value)
                if document is None:
                    continue
                for where, label in fields(document):
                    if (table, column, label) in seen:
                        continue
                    seen.add((table, column, label))
                    for new in choose(f"{table}.{column}{label}", get_at(document, where)):
                        found.append(Mutation(path, f"{table}.{column}{label} = {new!r}",
                                              _row_update(path, table, column, rowid,
                                                          lambda d=document, w=where, n=new: json.dumps(set_at(d, w, n)))))
    connection.close()
    return found


def _tables(connection) -> list[str]:
    return [r[0] for r in connection.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def _row_key(connection, table: str) -> list[str]:
    """What tells a row apart: its rowid, or for a WITHOUT ROWID table its primary key."""
    try:
        connection.execute(f'SELECT rowid FROM "{table}" LIMIT 0')
        return ["rowid"]
    except sqlite3.OperationalError:
        info = connection.execute(f'PRAGMA table_info("{table}")').fetchall()
        return [f'"{c[1]}"' for c in sorted(info, key=lambda c: c[5]) if c[5]]


def _json_of(value):
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return None


def _row_update(path, table, column, row: dict, new) -> Callable[[], None]:
    """Set one row's column to `new` (or to what `new()` returns, when it is a function)."""
    where = " AND ".join(f"{k} = ?" for k in row)

    def apply():
        value = new() if callable(new) else new
        connection = sqlite3.connect(path)
        try:
            connection.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE {where}', (value, *row.values()))
            connection.commit()
        except sqlite3.DatabaseError:  # a constraint refuses the value: the store cannot hold it
            pass
        connection.close()
    return apply


def id_mutations(home: str) -> list[Mutation]:
    """For every id-like key of the JSON records (`id`, `uuid`, `parentUuid`, `tool_call_id`,
    ...): once removed everywhere in a file, once set everywhere in a file to its first value
    (every record, call and result then claims the same id)."""
    found = []
    for path in native_files(home):
        if is_sqlite(path):
            found.extend(_sqlite_id_mutations(path))
            continue
        shape, records = read_records(path)
        keys = sorted({where[-1] for r in records for where, _ in fields(r)
                       if isinstance(where[-1], str) and ID_KEY.search(where[-1])})
        for key in keys:
            first = next(_values_of(records, key))
            for label, new in (("removed", _DROP), (f"= {first!r}", first)):
                found.append(Mutation(path, f"every {key} {label}",
                                      lambda p=path, k=key, s=shape, r=records, n=new: write_records(p, s, _rekey(r, k, n))))
    return found


def _sqlite_id_mutations(path: str) -> list[Mutation]:
    """Id columns (NULL everywhere, or the first row's value everywhere where no constraint
    refuses it) and id keys in the JSON of text columns (removed, or made identical)."""
    connection = sqlite3.connect(path)
    found = []
    for table in _tables(connection):
        names = [d[0] for d in connection.execute(f'SELECT * FROM "{table}" LIMIT 0').description]
        for column in names:
            values = [r[0] for r in connection.execute(f'SELECT "{column}" FROM "{table}"')]
            if not values:
                continue
            if ID_KEY.search(column):
                for new in (None, values[0]):
                    found.append(Mutation(path, f"every {table}.{column} = {new!r}",
                                          _column_update(path, table, column, lambda _v, n=new: n)))
            documents = [_json_of(v) for v in values]
            keys = sorted({w[-1] for d in documents if d is not None for w, _ in fields(d)
                           if isinstance(w[-1], str) and ID_KEY.search(w[-1])})
            for key in keys:
                first = next(v for d in documents if d is not None for v in _values_of(d, key))
                for label, new in (("removed", _DROP), (f"= {first!r}", first)):
                    found.append(Mutation(path, f"every {table}.{column}.{key} {label}",
                                          _column_update(path, table, column, _json_rekey(key, new))))
    connection.close()
    return found


def _json_rekey(key, new) -> Callable:
    def change(value):
        document = _json_of(value)
        return value if document is None else json.dumps(_rekey(document, key, new))
    return change


def _column_update(path, table, column, change: Callable) -> Callable[[], None]:
    """Apply `change` to the column's value in every row, row by row (a row whose new value a
    constraint refuses keeps its old one)."""
    def apply():
        connection = sqlite3.connect(path)
        connection.create_function("mutated", 1, change)
        key = _row_key(connection, table)
        where = " AND ".join(f"{k} = ?" for k in key)
        for row in connection.execute(f'SELECT {", ".join(key)} FROM "{table}"').fetchall():
            try:
                connection.execute(f'UPDATE "{table}" SET "{column}" = mutated("{column}") WHERE {where}', row)
            except sqlite3.DatabaseError:
                pass
        connection.commit()
        connection.close()
    return apply


_DROP = object()


def _rekey(value, key, new):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == key:
                if new is not _DROP:
                    out[k] = new
            else:
                out[k] = _rekey(v, key, new)
        return out
    if isinstance(value, list):
        return [_rekey(v, key, new) for v in value]
    return value


def _values_of(value, key):
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                yield v
            yield from _values_of(v, key)
    elif isinstance(value, list):
        for v in value:
            yield from _values_of(v, key)
