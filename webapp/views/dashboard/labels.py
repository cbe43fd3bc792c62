"""Stored values as people read them: roles, token scopes, statuses and task kinds, in the
dashboard's language. The values themselves (in forms, the API and the CLI) stay English."""

from __future__ import annotations

from flask_babel import lazy_gettext as _l

from webapp import notify
from webapp.schedules import picker as schedule_picker
from webapp.sites import setting_fields
from webapp.views.dashboard import bp

ROLES = {"admin": _l("admin"), "editor": _l("editor"), "viewer": _l("viewer")}
SCOPES = {"read": _l("read"), "write": _l("write")}
# Generations, announcements and tasks share the status badge.
STATUSES = {
    "running": _l("running"), "publishing": _l("publishing"), "succeeded": _l("succeeded"),
    "unchanged": _l("unchanged"), "failed": _l("failed"), "superseded": _l("superseded"),
    "pending": _l("pending"), "sending": _l("sending"), "delivered": _l("delivered"),
    "accepted": _l("accepted"), "queued": _l("queued"), "done": _l("done"), "ok": _l("ok"),
    "failing": _l("failing"),
}
TASK_KINDS = {"regenerate": _l("Regenerate"), "notify": _l("Announce"), "import": _l("Import"),
              "pre-flight check": _l("Pre-flight check"), "setup check": _l("Test my setup"),
              "discover": _l("Discovery crawl"),
              "verify": _l("Verification")}


def _named(names: dict, value) -> str:
    """The value's name in the request's language; a value without one is shown as it is."""
    return str(names.get(value, value if value is not None else ""))


@bp.app_template_global()
def role_name(role: str) -> str:
    return _named(ROLES, role)


@bp.app_template_global()
def scope_name(scope: str) -> str:
    return _named(SCOPES, scope)


@bp.app_template_global()
def status_name(status: str) -> str:
    return _named(STATUSES, status)


@bp.app_template_global()
def task_kind_name(kind: str) -> str:
    return _named(TASK_KINDS, kind)


@bp.app_template_global()
def engine_name(engine: str) -> str:
    """A search engine as people read it (IndexNow, Search Console); an unknown one as stored."""
    module = notify.ENGINES.get(engine)
    return module.NAME if module else engine


@bp.app_template_global()
def schedule_name(schedule: str) -> str:
    """A schedule (`every 6h`, `cron:0 3 * * *`) in the reader's words."""
    return schedule_picker.describe(schedule)


@bp.app_template_global()
def setting_choice(name: str, value: str) -> str:
    """A select setting's value by its label in the reader's language (as the settings page
    names it); a value with no label is shown as it is."""
    return _named(dict(setting_fields.FIELDS[name].choices), value)
