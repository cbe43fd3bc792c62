"""The README stays a front page, and the reference in docs/ stays whole: every setting the
server reads is documented, and every link between the documents leads somewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", ROOT / "bench" / "RESULTS.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)|<img src=\"([^\"]+)\"")


def settings_read_from_the_environment() -> set[str]:
    """Each name `webapp/config.py` reads: the first argument of an `env_*` helper, a name
    checked with `"NAME" not in overrides`, and the names of a loop over (name, default) pairs."""
    tree = ast.parse((ROOT / "webapp" / "config.py").read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id.startswith("env_") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
        elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
              and isinstance(node.ops[0], ast.NotIn)):
            names.add(node.left.value)
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple):
            names.update(pair.elts[0].value for pair in node.iter.elts
                         if isinstance(pair, ast.Tuple) and isinstance(pair.elts[0], ast.Constant))
    return {name for name in names if re.fullmatch(r"[A-Z][A-Z0-9_]+", name)}


def test_the_readme_is_a_front_page_a_newcomer_reads_in_five_minutes():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 400, f"README.md has {len(lines)} lines: move reference text to docs/"


def test_every_setting_the_server_reads_is_in_the_configuration_reference():
    names = settings_read_from_the_environment()
    assert {"DATABASE_URL", "OUTBOUND_ALLOW", "VERIFY_TIMEOUT", "INDEXNOW_ENDPOINT"} <= names
    reference = (ROOT / "docs" / "configuration.md").read_text()
    missing = sorted(name for name in names if f"`{name}`" not in reference)
    assert not missing, f"docs/configuration.md does not describe {missing}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_link_between_the_documents_leads_to_a_file_and_heading_that_exist(document):
    broken = broken_links(document)
    assert not broken, f"{document.name} links to what does not exist: {broken}"


def broken_links(document: Path) -> list[str]:
    broken = []
    for match in _LINK.finditer(document.read_text()):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):
            continue  # an address on the web
        path, _, anchor = target.partition("#")
        file = (document.parent / path).resolve() if path else document
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    return broken


def anchors(document: Path) -> set[str]:
    """The anchors GitHub makes of a document's headings, and those written as `<a id=...>`."""
    text = document.read_text()
    found = set(re.findall(r'<a id="([^"]+)"', text))
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return found


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## A part, too\n<a id=\"here\"></a>\n")
    (tmp_path / "b.md").write_text(
        "[ok](a.md#a-part-too) [ok](a.md#here) [web](https://example.com/x)\n"
        "[no file](c.md) [no heading](a.md#elsewhere) [self](#nothing)\n```\n# not a heading\n```\n")
    assert broken_links(tmp_path / "b.md") == ["c.md", "a.md#elsewhere", "#nothing"]
