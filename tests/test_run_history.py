"""A run's cost does not grow with its site's history: a batch of small sites reads as many
rows of the runs' tables (generations, their file lists, the stored sets) for sites that ran
forty times before as for sites that ran six times, each through an index's condition (no
table or index read whole), and prunes the same.

Measured on PostgreSQL, whose EXPLAIN ANALYZE counts the rows each scan reads: the batch's
statements are captured as it runs, then explained with their parameters (in a transaction
rolled back) with sequential scans priced out, so that a table read whole shows as such
however small the test's tables are."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import event, select, update

from tests.builders import make_site, make_urls
from tests.test_small_sites import due_now
from webapp import jobs
from webapp.models import Generation, GenerationFile, Site, Url
from webapp.sitemaps import get_store

RUN_TABLES = {"generations", "generation_files", "stored_files"}


def sites_with_history(session, label: str, earlier: int) -> list[int]:
    """Three small sites that each ran `earlier` times before (old runs, their sets pruned:
    a generation and its file list each)."""
    sites = [make_site(session, f"{label}{n}", f"https://{label.lower()}{n}.example.com/")
             for n in range(3)]
    for site in sites:
        make_urls(session, site, 3)
        session.add_all(Generation(site_id=site.id, number=n + 1, status="succeeded", url_count=3,
                                   file_count=1, bytes=900, files=[GenerationFile(
                                       name="sitemap.xml", kind="urlset", url_count=3,
                                       bytes=900, gzip_bytes=300, sha256=f"{n:064x}",
                                       lastmod="2025-01-01T00:00:00+00:00")])
                        for n in range(earlier))
    session.commit()
    return [site.id for site in sites]


def run_changed(app, session, ids: list[int], day: int) -> None:
    """A URL of each site changed, then their batch run: a new set published, one pruned."""
    session.execute(update(Url).where(Url.site_id.in_(ids)).values(lastmod=f"2026-01-{day:02d}"))
    session.commit()
    due_now(session, *session.scalars(select(Site).where(Site.id.in_(ids))))
    assert set(jobs.generate_many_if_due(ids, app).values()) == {"succeeded"}


def captured(app, run) -> list[tuple[str, object]]:
    """The statements (with their parameters) `run` sends that read or change the runs'
    tables, inserts aside (they read nothing)."""
    seen = []
    engine = app.extensions["db_engine"]

    def keep(_conn, _cursor, statement, parameters, _context, executemany):
        if not executemany and not statement.lstrip().upper().startswith("INSERT") and any(
                f" {table}" in statement for table in RUN_TABLES):
            seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        run()
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    return seen


def rows_read(app, statements) -> tuple[int, list[str]]:
    """The rows the statements' scans of the runs' tables read (returned or filtered out),
    and the scans that read a table or an index whole."""
    total, whole = 0, []
    connection = app.extensions["db_engine"].raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute("SET LOCAL enable_seqscan = off")
        for statement, parameters in statements:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", parameters)
            plan = cursor.fetchone()[0]
            nodes = [(plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]]
            while nodes:
                node = nodes.pop()
                nodes.extend(node.get("Plans", []))
                if node.get("Relation Name") not in RUN_TABLES:
                    continue
                if node["Node Type"] == "Seq Scan" or (
                        node["Node Type"] in ("Index Scan", "Index Only Scan")
                        and "Index Cond" not in node):
                    whole.append(f"{node['Relation Name']}: {statement}")
                total += (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
                          ) * node["Actual Loops"]
    finally:
        connection.rollback()
        connection.close()
    return total, whole


def test_a_batch_reads_as_many_rows_of_its_sites_runs_after_forty_runs_as_after_six(
        app, session, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("the rows a statement reads are counted by PostgreSQL's EXPLAIN ANALYZE")
    app.config["SITEMAP_KEEP_GENERATIONS"] = 2
    new = sites_with_history(session, "New", 6)
    old = sites_with_history(session, "Old", 40)
    for day in (1, 2):  # two real runs each: sets kept, the next run prunes one
        run_changed(app, session, new, day)
        run_changed(app, session, old, day)
    statements = {label: captured(app, lambda ids=ids: run_changed(app, session, ids, 3))
                  for label, ids in (("new", new), ("old", old))}
    (short, whole_short), (long, whole_long) = (rows_read(app, statements["new"]),
                                                rows_read(app, statements["old"]))
    assert whole_short == whole_long == []
    assert long == short, (short, long)
    assert [len(get_store(app).kept_generations(site.storage_key)) for site in
            session.scalars(select(Site).where(Site.id.in_(new + old)))] == [2] * 6
