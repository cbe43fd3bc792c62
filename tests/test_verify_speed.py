"""What verification does faster must find the same: the page read with lxml's plain
elements and stripped in one pass gives the fingerprint, noindex and canonical the reading
before it gave (lxml.html's elements, drop_tree, text_content), and workers that take URLs a
chunk at a time still check each URL once, within the bound per host."""

from __future__ import annotations

import hashlib

import lxml.html
import pytest

from tests.test_verify import checks, make_verified_site, served, web  # noqa: F401 (fixtures)
from webapp.outbound import page_text
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
    text = page_text(headers.get("Content-Type"), body)
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


def test_a_check_that_finds_what_the_last_one_did_rewrites_only_its_run(app, session,
                                                                      web):  # noqa: F811
    """A page answered 304 (or the same again) is one id in a bulk update of the run and the
    time: the rows written again are exactly the checks that found something new."""
    from sqlalchemy import event

    site = make_verified_site(session, web)
    first_run = verify_site(app, site.id).run_id
    first = checks(session, site)
    web.version = 2  # /site/changing, /site/etag and the PDF change; nothing else does
    written = []

    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO URL_CHECKS"):
            written.append(len(parameters) if executemany else 1)

    event.listen(app.extensions["db_engine"], "before_cursor_execute", count)
    try:
        second_run = verify_site(app, site.id).run_id
    finally:
        event.remove(app.extensions["db_engine"], "before_cursor_execute", count)
    second = checks(session, site)
    kept = ("run_id", "checked_at")
    moved = {path for path, check in second.items()
             if any(getattr(check, name) != getattr(first[path], name)
                    for name in vars(check) if name not in kept)}
    assert {"changing", "etag", "file.pdf"} <= moved and len(moved) < len(second) - 5
    assert sum(written) == len(moved)
    assert {check.run_id for check in second.values()} == {second_run} != {first_run}
    assert all(second[path].checked_at > first[path].checked_at for path in second)
