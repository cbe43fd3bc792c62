"""The least a WSGI app can do to serve bench/serve.py's file: gunicorn's own ceiling.

bench/serve.py runs it under gunicorn with the production settings, beside the app and nginx,
so that the app's figure can be read against what gunicorn itself reaches on the machine.
It answers every path with the exported file named by BARE_FOLDER: gzip-encoded when asked,
and 304 for its ETag, with the headers the app sends; nothing is looked up per request.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER = Path(os.environ["BARE_FOLDER"])
PLAIN = (FOLDER / "sitemap.xml").read_bytes()
GZIPPED = (FOLDER / "sitemap.xml.gz").read_bytes()
ETAG = '"bare"'


def app(environ, start_response):
    if environ.get("HTTP_IF_NONE_MATCH") == ETAG:
        start_response("304 Not Modified", [("ETag", ETAG), ("Vary", "Accept-Encoding")])
        return []
    gzip = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
    body = GZIPPED if gzip else PLAIN
    headers = [("Content-Type", "application/xml; charset=utf-8"),
               ("Content-Length", str(len(body))), ("ETag", ETAG), ("Vary", "Accept-Encoding"),
               ("Cache-Control", "no-cache"), ("X-Robots-Tag", "noindex")]
    if gzip:
        headers.append(("Content-Encoding", "gzip"))
    start_response("200 OK", headers)
    return [body]
