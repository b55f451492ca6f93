"""One session's rows of a database store as a database of their own: what the archive keeps of
a session of a store that holds many (discovery/archive.py: `extract`, `extract_signature`).

A module names a session's rows table by table, with `rows(connection)`: (table, condition)
pairs, each condition an SQL expression over the store in which every `?` stands for the
session's id; the first pair selects the session's own row. `tree` gives the condition for a
session and its sub-agent sessions.

The image has the store's schema as `sqlite_ro.connect` copies it (no views), tables first,
then the rows, then indexes over columns (`_plain_indexes`) and triggers (a trigger must not
fire on the copy), and only those
rows, each with its rowid: a query that orders by rowid, or scans, reads them in the order the
store gave. SQLite copies the rows from the store's snapshot into the image (an attached
in-memory database): no value goes through Python.

The signature is a digest of the rows' values and rowids, of their columns and of the
conditions: any change of a row changes it (an "updated" timestamp would not do: Crush stamps
whole seconds, Hermes stamps nothing). It reads the rows within the bounds of what a
translation reads of one session (`sqlite_ro.RowBudget`): no value over MAX_VALUE_BYTES comes
into Python (its size stands for it), and a session of more than MAX_SESSION_ROWS rows or
MAX_SESSION_BYTES bytes of values has no signature (None): the archive then keeps the database
files, as it does for the stores without an extract. So does a session whose rows SQLite cannot
read whole (a damaged page): those files translate to the document, warnings included, that the
store gives now.
"""

from __future__ import annotations

import marshal
import sqlite3
import threading
from collections import OrderedDict

from agents import sqlite_ro
from agents.sqlite_ro import byte_length, capped, quoted, StoreError

# The longest value an extract copies, or its schema (a CHECK, a generated column) computes:
# a value a translation leaves out (over MAX_VALUE_BYTES) is kept whole, so that the archived
# document says so too; a session holding a longer one keeps its database files.
LONGEST_VALUE = 2 * sqlite_ro.MAX_VALUE_BYTES
_lock = threading.Lock()         # the snapshots below serve one caller at a time
_snapshots: OrderedDict = OrderedDict()  # path -> (stamp, size, connection), least recent first


def tree(connection, table: str, parent: str) -> str:
    """SQL for the ids of the session `?` and of its sub-agent sessions at any depth (rows of
    `table` whose `parent` column names one of them; a loop ends); the session alone where the
    store's `table` has no such column."""
    if parent not in sqlite_ro.columns(connection, table):
        return "(?)"
    return (f"(WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT child.id FROM {quoted(table)} "
            f"child JOIN tree ON child.{quoted(parent)} = tree.id) SELECT id FROM tree)")


def signature(path: str, rows, session_id: str) -> str | None:
    """The digest of the session's rows (see the module's docstring), None when the extract would
    hold more than a translation reads or SQLite cannot read the rows. Raises StoreError when
    the store cannot be read or no longer holds the session."""
    with _lock:
        connection = _store(path)
        try:
            return _digest(connection, rows(connection), session_id)
        except sqlite3.DatabaseError:
            return None


def image(path: str, rows, session_id: str) -> bytes:
    """The store's schema with only the session's rows, as a database image
    (`Connection.serialize`). Raises StoreError when the store cannot be read, no longer holds
    the session, or holds more of it than an extract does; sqlite3.DatabaseError when SQLite
    cannot read the rows."""
    with _lock:
        connection = _store(path)
        selected = rows(connection)
        if _digest(connection, selected, session_id) is None:
            raise StoreError(f"session {session_id} holds more than {sqlite_ro.MAX_SESSION_ROWS} rows "
                             f"or {sqlite_ro.MAX_SESSION_BYTES >> 20} MB")
        schema = connection.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                                    "AND substr(name, 1, 7) != 'sqlite_'").fetchall()
        tables = _database([sql for kind, _, sql in schema if kind == "table"])
        copied = _copied(connection, tables, selected, session_id)
        plain = _plain_indexes(connection)
        return _database([sql for kind, name, sql in schema
                          if kind == "trigger" or (kind == "index" and name in plain)], copied)


def _plain_indexes(connection) -> set[str]:
    """The store's indexes over columns alone, the ones an extract keeps (a query may read rows
    in an index's order). An index over an expression, or a partial one, is left out: building
    it runs the store's SQL once per row (a planted `zeroblob(20000000)` in an index took
    seconds a row), and no translator's query needs one."""
    plain = set()
    for (table,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for index in connection.execute(f"PRAGMA main.index_list({quoted(table)})").fetchall():
            name, partial = index[1], index[4]
            columns = connection.execute(f"PRAGMA main.index_info({quoted(name)})").fetchall()
            if not partial and columns and all(column[1] >= 0 for column in columns):
                plain.add(name)
    return plain


def _store(path: str) -> sqlite3.Connection:
    """A snapshot of the store for archiving alone (`sqlite_ro.shared` is read by the mount's
    serving thread while archiving runs in another), kept while the store does not change.
    Archiving goes through sessions in discovery's order, which mixes stores: the recently used
    snapshots are kept up to SHARED_BYTES in all (the last one always), as `shared` keeps its."""
    stamp = sqlite_ro.stamp_of(path)
    found = _snapshots.pop(path, None)
    if found is not None and found[0] != stamp:
        found[2].close()
        found = None
    if found is None:
        found = (stamp, sqlite_ro.size_of(path), sqlite_ro.connect(path))
    _snapshots[path] = found
    while len(_snapshots) > 1 and sum(e[1] for e in _snapshots.values()) > sqlite_ro.SHARED_BYTES:
        _snapshots.popitem(last=False)[1][2].close()
    return found[2]


def _digest(connection, selected: list, session_id: str) -> str | None:
    import hashlib  # here: listings import this module, and hashlib loads OpenSSL

    hasher = hashlib.blake2b(digest_size=16)
    count = size = 0
    for number, (table, where) in enumerate(selected):
        fields = _fields(connection, table)
        hasher.update(marshal.dumps((table, where, fields), 4))
        before = count
        for row in _rows(connection, table, where, fields, session_id, sqlite_ro.MAX_SESSION_ROWS - count + 1):
            count += 1
            size += sum(n for n in row[1::2] if n)
            if count > sqlite_ro.MAX_SESSION_ROWS or size > sqlite_ro.MAX_SESSION_BYTES:
                return None
            hasher.update(marshal.dumps(row, 4))
        if number == 0 and count == before:
            raise StoreError(f"session {session_id} is no longer in the store")
    return hasher.hexdigest()


def _rows(connection, table: str, where: str, fields: list[str], session_id: str, limit: int):
    """The selected rows of a table, in rowid order, each value capped and followed by its size."""
    if not fields:
        return []
    select = ", ".join(f"{capped(f)}, {byte_length(f)}" for f in fields)
    return connection.execute(f"SELECT {select} FROM main.{quoted(table)} WHERE {where} ORDER BY 1 LIMIT ?",
                              _arguments(where, session_id) + (limit,))


def _arguments(where: str, session_id: str) -> tuple:
    return (session_id,) * where.count("?")


def _fields(connection, table: str) -> list[str]:
    """The table's rowid (when it has one) and stored columns, in order, as SQL (the generated
    columns, which cannot be inserted, left out); none when the store has no such table."""
    names = [row[1] for row in connection.execute(f"PRAGMA main.table_info({quoted(table)})")]
    key = _rowid(connection, table, names) if names else None
    return ([key] if key else []) + [quoted(n) for n in names]


def _rowid(connection, table: str, names: list[str]) -> str | None:
    """The name the table's rowid goes by (a column may take one of its three names); None for
    a table without one."""
    taken = {name.lower() for name in names}
    name = next((n for n in ("rowid", "_rowid_", "oid") if n not in taken), None)
    if name is None:
        return None
    try:
        connection.execute(f"SELECT {name} FROM main.{quoted(table)} LIMIT 0")
    except sqlite3.OperationalError:  # a WITHOUT ROWID table
        return None
    return name


def _copied(connection, tables: bytes, selected: list, session_id: str) -> bytes:
    """`tables` (an image holding the store's tables) with the selected rows copied into it.
    The snapshot is our own copy in memory: it is made writable for the copy alone."""
    connection.execute("PRAGMA query_only=0")
    longest = connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, LONGEST_VALUE)
    try:
        connection.execute("PRAGMA foreign_keys=0")  # a row may name one left out (another session)
        connection.execute("ATTACH ':memory:' AS extract")
        try:
            connection.deserialize(tables, name="extract")
            for table, where in selected:
                _copy(connection, table, where, session_id)
            connection.commit()
            return connection.serialize(name="extract")
        finally:
            connection.rollback()
            connection.execute("DETACH extract")
    finally:
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, longest)
        connection.execute("PRAGMA query_only=1")


def _copy(connection, table: str, where: str, session_id: str) -> None:
    fields = ", ".join(_fields(connection, table))
    if fields:
        connection.execute(f"INSERT INTO extract.{quoted(table)} ({fields}) SELECT {fields} "
                           f"FROM main.{quoted(table)} WHERE {where}", _arguments(where, session_id))


def _database(statements: list[str], image: bytes | None = None) -> bytes:
    """An image (a new one, or `image`) with the statements of a schema run in it; one this
    SQLite cannot run (a virtual table of an extension, the shadow tables of one it made) is
    left out: translation reads none."""
    connection = sqlite_ro.bounded_memory(LONGEST_VALUE)
    try:
        if image is not None:
            connection.deserialize(image)
        for sql in statements:
            try:
                connection.execute(sql)
            except sqlite3.DatabaseError:
                pass
        connection.commit()
        return connection.serialize()
    finally:
        connection.close()
