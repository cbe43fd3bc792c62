"""The layout's rules, read from the source with `ast`: which module may import what.

Each concern has one home (docs/layout.md); these tests keep the seams between them where
they are: pure protocol rules, thin models, one outbound package, packages used through their
front doors, no import cycles.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "webapp"
# Packages whose `__init__` names what the rest of the app may use.
FRONT_DOORS = ("webapp.discover", "webapp.jobs", "webapp.models", "webapp.notify",
               "webapp.outbound", "webapp.scheduler", "webapp.schedules", "webapp.sitemaps",
               "webapp.urls", "webapp.views.public")
# The layers, lowest first: a module imports from its own layer and the ones below, never from
# one above (the most specific name places a module: webapp.views.x is an interface).
LAYERS = (
    ("foundations", ("webapp.errors", "webapp.config", "webapp.protocol", "webapp.said",
                     "webapp.i18n")),
    ("infrastructure", ("webapp.db", "webapp.many_rows", "webapp.outbound")),
    ("models", ("webapp.models",)),
    ("domain", ("webapp.accounts", "webapp.sites", "webapp.urls", "webapp.sitemaps",
                "webapp.notify", "webapp.verify", "webapp.discover", "webapp.schedules",
                "webapp.leases", "webapp.jobs")),
    ("processes", ("webapp.tasks", "webapp.scheduler")),
    ("interfaces", ("webapp.views", "webapp.cli", "webapp.gunicorn_conf")),
    ("app", ("webapp",)),
)
# The clock (the scheduler process) drives the work: only its own command group starts it.
CLOCK = "webapp.scheduler"
CLOCK_USERS = ("webapp.scheduler", "webapp.cli")
# The one name a lower layer may take from the app's own __init__: the lazy front doors' helper
# (webapp.front_door). Python loads webapp/__init__.py before any module beneath it, so the
# import loads nothing; create_app, the app's table of contents, stays out of reach.
FROM_THE_APP = {"front_door"}
MAX_FLAT_MODULES = 12  # modules directly in webapp/ besides __init__.py; the rest in packages
MAX_LINES = 400  # non-blank lines of a module
# Libraries that send requests or speak HTTP: only the outbound package's modules may use them.
HTTP_CLIENTS = ("requests", "urllib3", "http.client", "urllib.request", "httpx", "aiohttp",
                "google.auth.transport", "h11")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(APP.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _statements(module: str, top_level_only: bool) -> Iterator[tuple[str, list[str]]]:
    """(the module an import statement names, the names it takes from it) of `module`."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield _absolute(module, node), [alias.name for alias in node.names]


def _lazy_homes(package: str) -> dict[str, str]:
    """A front door that loads names on first use (PEP 562) lists each name's module in a
    literal `_HOMES` dict: {name: module}."""
    tree = ast.parse(MODULES[package].read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and "_HOMES" in ast.unparse(
                node.targets[0] if isinstance(node, ast.Assign) else node.target):
            return {name: f"{package}.{home}" for name, home in ast.literal_eval(node.value).items()}
    return {}


def imports(module: str, top_level_only: bool = False) -> Iterator[str]:
    """Every module `module` imports: `from a import b` names a.b when b is a module, and the
    module that defines b when a is a front door that loads b on first use."""
    for base, names in _statements(module, top_level_only):
        homes = _lazy_homes(base) if _is_package(base) else {}
        yield from ([f"{base}.{name}" if f"{base}.{name}" in MODULES else homes.get(name, base)
                     for name in names] or [base])


def app_imports(module: str, top_level_only: bool = False) -> set[str]:
    return {name for name in imports(module, top_level_only) if name.startswith("webapp")}


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_walker_sees_the_imports_it_judges():
    # Guards the rules below: a walker that found nothing would pass them all.
    assert {"webapp.db", "webapp.errors", "webapp.models", "webapp.notify",
            "webapp.leases"} <= app_imports("webapp.sites")
    assert "webapp.notify.ledger" in app_imports("webapp.notify.delivery")
    assert "webapp.urls.changes" in app_imports("webapp.notify.ledger")  # through the lazy door
    assert "requests" in set(imports("webapp.outbound.session"))
    assert "h11" in set(imports("webapp.outbound.crawler"))


def test_protocol_imports_nothing_of_the_app_but_its_error_type():
    for module in (m for m in MODULES if _within(m, "webapp.protocol")):
        assert {name for name in app_imports(module)
                if not _within(name, "webapp.protocol")} <= {"webapp.errors"}, module
    assert app_imports("webapp.errors") == set()


def test_models_import_only_the_database_base():
    for module in (m for m in MODULES if _within(m, "webapp.models")):
        assert {name for name in app_imports(module)
                if not _within(name, "webapp.models")} <= {"webapp.db"}, module


@pytest.mark.parametrize("package", ["webapp.sitemaps", "webapp.notify", "webapp.urls",
                                     "webapp.scheduler", "webapp.outbound", "webapp.jobs",
                                     "webapp.sites", "webapp.leases", "webapp.accounts",
                                     "webapp.schedules", "webapp.verify", "webapp.discover",
                                     "webapp.tasks", "webapp.db", "webapp.many_rows",
                                     "webapp.config", "webapp.models", "webapp.protocol",
                                     "webapp.errors"])
def test_domain_code_imports_no_views_and_no_commands(package):
    for module in (m for m in MODULES if _within(m, package)):
        wrong = {name for name in app_imports(module)
                 if _within(name, "webapp.views") or _within(name, "webapp.cli")}
        assert not wrong, f"{module} imports {sorted(wrong)}"


def _senders_outside_outbound() -> dict[str, list[str]]:
    """{module outside the webapp.outbound package: the HTTP libraries it imports}."""
    found = {}
    for module in MODULES:
        if _within(module, "webapp.outbound"):
            continue
        clients = {name for name in imports(module)
                   if any(_within(name, client) for client in HTTP_CLIENTS)}
        if clients:
            found[module] = sorted(clients)
    return found


def test_only_the_outbound_package_sends_requests():
    assert not _senders_outside_outbound(), "send through webapp.outbound"


def test_a_module_outside_the_outbound_package_that_sends_requests_is_found(tmp_path,
                                                                            monkeypatch):
    """The rule above, shown to fail: a module beside the package whose name only begins
    like it, or one elsewhere, is found; a module inside the package is not."""
    sources = {"webapp.outbound_extra": "import requests\n",
               "webapp.notify.sender": "from urllib3 import PoolManager\n",
               "webapp.verify.framing": "import h11\n",
               "webapp.outbound.extra": "import requests\n"}
    for number, (module, source) in enumerate(sources.items()):
        path = tmp_path / f"module{number}.py"
        path.write_text(source)
        monkeypatch.setitem(MODULES, module, path)
    assert _senders_outside_outbound() == {"webapp.outbound_extra": ["requests"],
                                           "webapp.notify.sender": ["urllib3"],
                                           "webapp.verify.framing": ["h11"]}


@pytest.mark.parametrize("package", FRONT_DOORS)
def test_packages_are_used_through_their_front_doors(package):
    for module in (m for m in MODULES if not _within(m, package)):
        inside = {base for base, _ in _statements(module, top_level_only=False)
                  if base.startswith(package + ".")}
        assert not inside, (f"{module} imports {sorted(inside)}: use the names "
                            f"{package} exports")


@pytest.mark.parametrize("package", FRONT_DOORS)
def test_front_doors_name_what_they_export(package):
    module = importlib.import_module(package)
    assert module.__all__, f"{package} has no __all__"
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{package} names {missing} but has no such thing"


def _shadowed_exports(package: str) -> list[str]:
    """Names a lazy front door exports that are also its modules' names: importing the module
    makes Python set the package's attribute to the module, and the export is lost."""
    return sorted(name for name in _lazy_homes(package) if f"{package}.{name}" in MODULES)


@pytest.mark.parametrize("package", sorted(p for p in MODULES if _is_package(p)))
def test_no_lazy_export_is_named_like_a_module_of_its_package(package):
    assert not _shadowed_exports(package), "give the module or the export another name"


def test_an_export_named_like_its_module_is_found(tmp_path, monkeypatch):
    """discover's `crawl` is a function in its module `crawl`: behind a lazy door, the first
    import of the module replaced it (found by the prefork worker tests)."""
    door = tmp_path / "__init__.py"
    door.write_text('_HOMES = {"crawl": "crawl", "accept": "review"}\n')
    monkeypatch.setitem(MODULES, "webapp.discover", door)
    assert _shadowed_exports("webapp.discover") == ["crawl"]


def test_the_import_worker_loads_only_the_row_rules():
    # Large imports check rows in a spawned process (urls/importing.py): it must start fast.
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, webapp.urls.csv_rows; print(*sorted(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    assert "webapp.urls.csv_rows" in loaded
    assert not {"sqlalchemy", "flask", "requests", "webapp.models"} & set(loaded)


@pytest.mark.parametrize("opening", [r"db_sessionmaker", r"sessionmaker\(", r"(?<![\w.])Session\(",
                                     r"engine\.connect\(", r"create_engine\("])
def test_sessions_are_opened_only_by_the_database_module(opening):
    for module, path in MODULES.items():
        if module == "webapp.db" or (module == "webapp.views.public"
                                     and opening == "db_sessionmaker"):
            continue  # the public routing table is handed the factory once, at start
        assert not re.search(opening, path.read_text()), (
            f"{module} opens sessions itself ({opening}): use webapp.db (get_session, "
            "session_scope, new_session)")


def test_modules_import_each_other_without_cycles():
    graph = {module: {name for name in app_imports(module, top_level_only=True)
                      if name in MODULES and name != module} for module in MODULES}
    # A module importing a name from its own package's __init__ (a blueprint's `bp`, defined
    # before the __init__ imports its route modules) is not a cycle; the __init__'s own
    # imports are followed, so a cycle through a front door is still found.
    graph = {module: {name for name in names if not _within(module, name)}
             for module, names in graph.items()}
    visiting, done = [], set()

    def visit(module: str) -> None:
        if module in done:
            return
        assert module not in visiting, " -> ".join(
            visiting[visiting.index(module):] + [module])
        visiting.append(module)
        for name in sorted(graph[module]):
            visit(name)
        visiting.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def _flat_modules() -> list[str]:
    """The modules directly in webapp/ (not packages, not the app's own __init__)."""
    return sorted(module for module, path in MODULES.items()
                  if module.count(".") == 1 and path.name != "__init__.py")


def test_webapp_keeps_a_short_list_of_flat_modules():
    flat = _flat_modules()
    assert len(flat) <= MAX_FLAT_MODULES, (
        f"{len(flat)} modules in webapp/ ({', '.join(flat)}): move some into the package of "
        "their concern")


def test_a_flat_module_beyond_the_limit_is_counted(tmp_path, monkeypatch):
    """The rule above, shown to fail: modules planted in webapp/ count, a package's do not."""
    before = _flat_modules()
    extra = [f"webapp.extra{number}" for number in range(MAX_FLAT_MODULES)]
    for module in [*extra, "webapp.accounts.extra"]:
        path = tmp_path / f"{module}.py"
        path.write_text("")
        monkeypatch.setitem(MODULES, module, path)
    monkeypatch.setitem(MODULES, "webapp.newpackage", tmp_path / "__init__.py")
    assert _flat_modules() == sorted([*before, *extra])
    assert len(_flat_modules()) > MAX_FLAT_MODULES


def _long_modules() -> dict[str, int]:
    """{module: its non-blank lines} of the modules longer than MAX_LINES."""
    counts = {module: sum(1 for line in path.read_text().splitlines() if line.strip())
              for module, path in MODULES.items()}
    return {module: count for module, count in counts.items() if count > MAX_LINES}


def test_no_module_is_over_the_line_limit():
    assert not _long_modules(), f"split these by concern (non-blank lines): {_long_modules()}"


def test_a_module_over_the_line_limit_is_found(tmp_path, monkeypatch):
    """The rule above, shown to fail: blank lines do not count, every other line does."""
    long, spaced = tmp_path / "long.py", tmp_path / "spaced.py"
    long.write_text("x = 1\n" * (MAX_LINES + 1))
    spaced.write_text("x = 1\n\n   \n" * MAX_LINES)
    monkeypatch.setitem(MODULES, "webapp.urls.long", long)
    monkeypatch.setitem(MODULES, "webapp.urls.spaced", spaced)
    assert _long_modules() == {"webapp.urls.long": MAX_LINES + 1}


def _clock_importers() -> dict[str, list[str]]:
    """{module outside the clock's package and its command: what of the clock it imports}."""
    found = {}
    for module in MODULES:
        if module == "webapp" or any(_within(module, user) for user in CLOCK_USERS):
            continue
        clock = sorted(name for name in app_imports(module) if _within(name, CLOCK))
        if clock:
            found[module] = clock
    return found


def test_no_domain_module_imports_the_clock():
    assert not _clock_importers(), "the clock drives the work; the work never imports it"


def test_a_module_that_imports_the_clock_is_found(tmp_path, monkeypatch):
    """The rule above, shown to fail: an import inside a function counts, as does a name the
    front door loads from the clock on first use; the scheduler's command may import it."""
    sources = {"webapp.urls.extra": "def f():\n    from webapp.scheduler import clock\n",
               "webapp.tasks.extra": "from webapp.scheduler import run_due_sites\n",
               "webapp.cli.extra": "from webapp import scheduler\n"}
    for number, (module, source) in enumerate(sources.items()):
        path = tmp_path / f"module{number}.py"
        path.write_text(source)
        monkeypatch.setitem(MODULES, module, path)
    assert _clock_importers() == {"webapp.urls.extra": ["webapp.scheduler.clock"],
                                  "webapp.tasks.extra": ["webapp.scheduler.clock"]}


def _layer(name: str) -> int:
    """The index in LAYERS of the most specific package `name` is within."""
    placed = [(len(package), number) for number, (_, packages) in enumerate(LAYERS)
              for package in packages if _within(name, package)]
    return max(placed)[1]


def _upward_imports() -> list[str]:
    """Every import, at the top or inside a function, of a higher layer than the importer's."""
    found = []
    for module in sorted(MODULES):
        for name in sorted(app_imports(module)):
            if name == "webapp" and not _takes_more_from_the_app(module):
                continue  # FROM_THE_APP's helper alone
            if _layer(name) > _layer(module):
                found.append(f"{module} ({LAYERS[_layer(module)][0]}) imports {name} "
                             f"({LAYERS[_layer(name)][0]})")
    return found


def _takes_more_from_the_app(module: str) -> bool:
    """Whether `module` imports a name of webapp/__init__.py other than FROM_THE_APP's."""
    return any(base == "webapp" and (not names or any(
        name not in FROM_THE_APP and f"webapp.{name}" not in MODULES for name in names))
        for base, names in _statements(module, top_level_only=False))


def test_every_module_has_a_layer():
    unplaced = [module for module in MODULES
                if module != "webapp" and _layer(module) == len(LAYERS) - 1]
    assert not unplaced, f"name the layer of {unplaced} in LAYERS"


def test_layers_only_import_downwards():
    assert not _upward_imports()


def test_an_import_of_a_higher_layer_is_found(tmp_path, monkeypatch):
    """The rule above, shown to fail: a model importing the domain, a domain module importing a
    view inside a function or create_app, and the protocol importing the database are found;
    a view importing a model, and a front door taking its helper, are not."""
    sources = {"webapp.models.extra": "from webapp.sites import find_site\n",
               "webapp.sites.extra": "def f():\n    from webapp.views import auth\n",
               "webapp.protocol.extra": "import webapp.db\n",
               "webapp.views.extra": "from webapp.models import Site\n",
               "webapp.urls.lazy": "from webapp import front_door\n",
               "webapp.urls.app": "from webapp import front_door\nfrom webapp import create_app\n"}
    for number, (module, source) in enumerate(sources.items()):
        path = tmp_path / f"module{number}.py"
        path.write_text(source)
        monkeypatch.setitem(MODULES, module, path)
    assert _upward_imports() == [
        "webapp.models.extra (models) imports webapp.sites (domain)",
        "webapp.protocol.extra (foundations) imports webapp.db (infrastructure)",
        "webapp.sites.extra (domain) imports webapp.views.auth (interfaces)",
        "webapp.urls.app (domain) imports webapp (app)"]
