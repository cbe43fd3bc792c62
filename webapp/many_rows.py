"""Statements over many rows with a few parameters: a batch of small sites writes each table
with one statement.

On PostgreSQL each column of the rows travels as one array parameter (`unnest(...)` for
inserts and updates, `= ANY(...)` for a list of keys), so the statement's text is the same
whatever the number of rows: parsed and planned once by the server, and by the driver (psycopg
parses the text of a statement of more than 50 parameters anew at every execution), and the
rows are one statement instead of one per row. Elsewhere (SQLite, which has no arrays and is
in-process) the rows go as SQLAlchemy sends them: executemany, IN lists.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    CursorResult,
    Table,
    any_,
    bindparam,
    func,
    insert,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session
from sqlalchemy.sql import visitors
from sqlalchemy.sql.dml import Insert, Update


def on_postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def among(session: Session, column: ColumnElement, values: Collection) -> ColumnElement[bool]:
    """`column IN values`; one array parameter on PostgreSQL, whatever the number of values."""
    if on_postgresql(session):
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    return column.in_(values)


def arrays(columns: dict[str, object], rows: Sequence[dict]):
    """A FROM clause of `rows` as arrays (PostgreSQL): unnest(...) AS anon(name, ...), a column
    per key of `columns` (name: the SQL type of its values), to join with."""
    values = [bindparam(None, [row[name] for row in rows], type_=ARRAY(type_))
              for name, type_ in columns.items()]
    return func.unnest(*values).table_valued(*columns).render_derived()


def insert_rows(session: Session, table: Table, rows: Sequence[dict],
                statement: Insert | None = None) -> CursorResult:
    """Insert `rows` (dicts with the same keys, named as `table`'s columns) with `statement`
    (default: a plain INSERT into `table`; it may add RETURNING or ON CONFLICT)."""
    statement = insert(table) if statement is None else statement
    if not on_postgresql(session):
        return session.connection().execute(statement, list(rows))
    names = list(rows[0])
    source = arrays({name: table.c[name].type for name in names}, rows)
    return session.connection().execute(statement.from_select(names, select(*source.c)))


def update_rows(session: Session, statement: Update, rows: Sequence[dict]) -> CursorResult:
    """Run `statement`, an UPDATE whose bind parameters are named after the keys of `rows`
    (each with its SQL type), once per row. On PostgreSQL one UPDATE ... FROM unnest(...),
    the parameters replaced by the arrays' columns, so RETURNING sees every row's."""
    if not on_postgresql(session):
        return session.connection().execute(statement, list(rows))
    types = {}

    def collect(element: BindParameter) -> None:
        if element.key in rows[0]:
            types[element.key] = element.type

    visitors.traverse(statement, {}, {"bindparam": collect})
    source = arrays(types, rows)

    def to_column(element):
        if isinstance(element, BindParameter) and element.key in types:
            return source.c[element.key]
        return None

    return session.connection().execute(visitors.replacement_traverse(statement, {}, to_column))
