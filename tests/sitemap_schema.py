"""Validate sitemap files with lxml against the official schemas, offline."""

from __future__ import annotations

import gzip
from pathlib import Path

from lxml import etree

SCHEMAS = Path(__file__).resolve().parent / "schemas"
# The core schemas use processContents="strict" for extensions, so a urlset that uses them only
# validates through a wrapper that imports every extension schema (schemas/README.md).
WRAPPER = """<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:import namespace="http://www.sitemaps.org/schemas/sitemap/0.9" schemaLocation="sitemap.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-image/1.1" schemaLocation="sitemap-image.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-video/1.1" schemaLocation="sitemap-video.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-news/0.9" schemaLocation="sitemap-news.xsd"/>
  <xs:import namespace="http://www.w3.org/1999/xhtml" schemaLocation="xhtml1-strict.xsd"/>
</xs:schema>"""
NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9",
      "image": "http://www.google.com/schemas/sitemap-image/1.1",
      "video": "http://www.google.com/schemas/sitemap-video/1.1",
      "xhtml": "http://www.w3.org/1999/xhtml"}


class _LocalXmlXsd(etree.Resolver):
    def resolve(self, url, pubid, context):
        if url.endswith("/xml.xsd"):
            return self.resolve_filename(str(SCHEMAS / "xml.xsd"), context)
        return None


def _load(document: etree._Element | None = None, filename: str | None = None) -> etree.XMLSchema:
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(_LocalXmlXsd())
    if filename:
        return etree.XMLSchema(etree.parse(str(SCHEMAS / filename), parser))
    tree = etree.fromstring(WRAPPER.encode(), parser, base_url=str(SCHEMAS) + "/")
    return etree.XMLSchema(tree)


URLSET = _load()
INDEX = _load(filename="siteindex.xsd")


def parse(path: Path) -> etree._Element:
    """Parse a sitemap (plain or gzip) and check it against the schema for its root element."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    root = etree.fromstring(data, etree.XMLParser(no_network=True, resolve_entities=False))
    schema = INDEX if etree.QName(root).localname == "sitemapindex" else URLSET
    schema.assertValid(root)
    return root


def locs(root: etree._Element) -> list[str]:
    return root.xpath("./sm:url/sm:loc/text() | ./sm:sitemap/sm:loc/text()", namespaces=NS)
