"""What verification does faster must find the same: the page read with lxml's plain
elements and stripped in one pass gives the fingerprint, noindex and canonical the reading
before it gave (lxml.html's elements, drop_tree, text_content), and workers that take URLs a
chunk at a time still check each URL once, within the bound per host."""

from __future__ import annotations

import hashlib

import lxml.html
import pytest

from tests.test_verify import checks, make_verified_site, served, web  # noqa: F401 (fixtures)
from webapp.verify import page, verify_site
from webapp.verify.settings import ignore_patterns

PAGES = [
    ("<html><head><title>T</title><script>var n=1;</script><style>p{}</style></head>"
    "<body><p>One <b>two</b> three</p></body></html>"),
    # Tails after removed elements, nested removed elements, comments and a PI.
    ("<p>a<script>x</script>b<noscript><style>s</style>ns</noscript>c<!-- no --> d"
    "<?php echo 1 ?>e<template><p>t</p></template>f</p>"),
    # A robots meta and a canonical inside <noscript>/<template> are not read; outside, are.
    ("<head><noscript><meta name=robots content=noindex><link rel=canonical href=/n>"
    "</noscript><link rel='alternate canonical' href='/c#x'><meta name=GoogleBot "
    "content='googlebot: NoIndex'></head><body>\u00a0text\u2003with\tspaces\n</body>"),
    "<template><meta name=robots content=none></template><p>only text</p>",
    "plain text, no markup at all",
    "<html><body><p>caf\u00e9 \u65e5\u672c\u8a9e</p><p>nonce-123 and 2026-01-01</p></body></html>",
    "<?xml version='1.0'?><html><body>declared</body></html>",
    "<p>unclosed <div>tags <span>everywhere<script>let a = '</div>';</script> after",
]


def _before_reading(url, headers, body, ignore):
    """The reading this release replaced, kept here to hold the new one to it."""
    text = page._XML_DECLARATION.sub("", body.decode(page.charset(headers, body), "replace"))
    tree = lxml.html.document_fromstring(
        text, parser=lxml.html.HTMLParser(remove_comments=True)) if text.strip() else None
    if tree is None:
        digest = hashlib.sha256(body).hexdigest()
    else:
        for element in list(tree.iter("script", "style", "noscript", "template")):
            element.drop_tree()
        folded = " ".join(tree.text_content().split())
        for pattern in ignore:
            folded = pattern.sub("", folded)
        digest = hashlib.sha256(folded.encode("utf-8", "surrogatepass")).hexdigest()
    return digest, page.noindex(headers, tree), page.canonical(url, headers, tree)


@pytest.mark.parametrize("html", PAGES)
@pytest.mark.parametrize("ignore", ["", r"nonce-\d+" + "\n" + r"\d{4}-\d\d-\d\d"])
def test_the_faster_reading_records_what_the_one_before_did(html, ignore):
    url, headers, body = "https://shop.example/p/1", {"Content-Type": "text/html"}, html.encode()
    patterns = ignore_patterns(ignore)
    tree = page.parse(headers, body)
    digest = page.fingerprint(tree, body, patterns)
    found = (digest, page.noindex(headers, tree), page.canonical(url, headers, tree))
    assert found == _before_reading(url, headers, body, patterns)


def test_the_pages_read_differ_where_they_should():
    """The comparison above can fail: the readings tell these pages apart."""
    headers = {"Content-Type": "text/html"}
    digests = {page.fingerprint(page.parse(headers, html.encode()), html.encode(), ())
               for html in PAGES}
    assert len(digests) == len(PAGES)
    tree = page.parse(headers, PAGES[2].encode())
    page.fingerprint(tree, b"", ())
    assert page.noindex(headers, tree) is True
    assert page.canonical("https://shop.example/p/1", headers, tree) == "https://shop.example/c"
    tree = page.parse(headers, PAGES[3].encode())
    page.fingerprint(tree, b"", ())
    assert page.noindex(headers, tree) is False


def test_workers_taking_chunks_check_every_url_once_within_the_bound(app, session,
                                                                   web):  # noqa: F811
    pages = [f"changing?n={n}" for n in range(70)]
    site = make_verified_site(session, web, pages=pages)
    app.config.update(VERIFY_CONCURRENCY=3)
    summary = verify_site(app, site.id, batch=20)
    assert summary.counts == {"ok": 70}
    assert sorted(checks(session, site)) == sorted(pages)
    asked = [entry for entry in web.log if entry["path"] == "/site/changing"]
    assert len(asked) == 70 and 1 <= web.most_in_flight <= 3


def test_a_second_run_that_finds_nothing_new_moves_only_the_run_and_the_time(
        app, session, web):  # noqa: F811
    """Unchanged checks (answered 304 to what the last check saw) are not written again row by
    row: one UPDATE a batch moves their run and time, and everything else stays as it was."""
    from sqlalchemy import event

    pages = [f"etag?n={n}" for n in range(30)] + ["", "broken"]
    site = make_verified_site(session, web, pages=pages)
    verify_site(app, site.id, batch=10)
    first = checks(session, site)
    statements: list[str] = []
    engine = app.extensions["db_engine"]

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(" ".join(statement.split()).lower())

    event.listen(engine, "before_cursor_execute", record)
    try:
        summary = verify_site(app, site.id, batch=10)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    second = checks(session, site)
    assert summary.counts == {name: sum(1 for check in first.values() if check.outcome == name)
                              for name in {check.outcome for check in first.values()}}
    etag = [entry for entry in web.log if entry["path"] == "/site/etag"]
    assert {entry["headers"].get("If-None-Match") for entry in etag[30:]} == {'"v1"'}
    written = [s for s in statements if s.startswith("insert into url_checks")]
    # The two pages that are not 304s (the home page and the broken one) are written whole.
    assert len(written) == 1, written
    moved = [s for s in statements if s.startswith("update url_checks set run_id")]
    assert len(moved) == 3  # a batch of 10 at a time: 30 unchanged pages
    for path, check in second.items():
        assert check.run_id == summary.run_id and check.checked_at > first[path].checked_at
        assert {name: value for name, value in vars(check).items()
                if name not in ("run_id", "checked_at")} == \
            {name: value for name, value in vars(first[path]).items()
             if name not in ("run_id", "checked_at")}, path
