"""Sites: the list, one site's overview, creating, deleting, and the buttons (settings:
`settings`)."""

from __future__ import annotations

from flask import abort, current_app, flash, redirect, render_template, request, url_for
from flask_babel import format_number
from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy import func, select

from webapp import notify, tasks
from webapp.db import get_session
from webapp.errors import InvalidValue, each_error, in_english
from webapp.models import Delivery, Generation, Site, utcnow
from webapp.protocol import check_site_scope
from webapp.said import render
from webapp.sitemaps import get_store
from webapp.sites import create_site, delete_site, setting_fields
from webapp.sites import listing as site_list
from webapp.urls import health
from webapp.views.auth import require
from webapp.views.dashboard import bp, charts, load_site
from webapp.jobs import site_numbers

PAGE = 50
MAX_PAGE = 1_000_000


def _list_args() -> tuple[str, str, int]:
    """The sites page's search, sort and page number from the query string; a 400 that names
    the parameter and its rule for anything else."""
    text, sort = request.args.get("q", ""), request.args.get("sort", "name")
    if len(text) > site_list.MAX_SEARCH:
        abort(400, _("q (the search) must be at most %(most)s characters; this one has "
                     "%(has)s.", most=site_list.MAX_SEARCH, has=len(text)))
    if sort not in site_list.SORTS:
        abort(400, _("sort must be one of %(sorts)s; not %(given)s.",
                     sorts=", ".join(site_list.SORTS), given=repr(sort[:40])))
    number = request.args.get("page", "1")
    if not (number.isascii() and number.isdigit() and 1 <= int(number) <= MAX_PAGE):
        abort(400, _("page must be a whole number from 1 to %(most)s; not %(given)s.",
                     most=format_number(MAX_PAGE), given=repr(number[:40])))
    return text, sort, int(number)


@bp.get("/")
@require("viewer")
def sites():
    text, sort, number = _list_args()
    rows, total = site_list.page(get_session(), text, sort, (number - 1) * PAGE, PAGE)
    kept = {name: value for name, value in (("q", text.strip()), ("sort", sort))
            if value and (name, value) != ("sort", "name")}
    return render_template("dashboard/sites.html", rows=rows, total=total, page=number,
                           pages=max(1, -(-total // PAGE)), first=(number - 1) * PAGE + 1,
                           kept=kept, text=text, sort=sort, sorts=site_list.SORTS)


@bp.route("/sites/new", methods=["GET", "POST"])
@require("editor")
def site_new():
    errors: dict[str, str] = {}
    if request.method == "POST":
        session = get_session()
        form = request.form
        try:
            site, warning = create_site(session, form.get("name", ""), form.get("base_url", ""),
                                        form.get("sitemap_url") or None,
                                        form.get("encoding") or "utf-8")
        except InvalidValue as exc:
            session.rollback()
            errors = {error.field: str(error) for error in each_error(exc)}
        else:
            session.commit()
            flash(_("Created %(site)s. Note: %(note)s", site=site.name, note=warning) if warning
                  else _("Created %(site)s.", site=site.name))
            return redirect(url_for("dashboard.site", slug=site.slug))
    return render_template("dashboard/site_new.html", errors=errors, form=request.form,
                           encodings=setting_fields.ENCODINGS), \
        422 if errors else 200


@bp.get("/sites/<slug>")
@require("viewer")
def site(slug):
    site = load_site(slug)
    session = get_session()
    runs = session.scalars(select(Generation).where(Generation.site_id == site.id)
                           .order_by(Generation.id.desc()).limit(30)).all()
    outcomes = dict(session.execute(select(Delivery.status, func.count()).where(
        Delivery.site_id == site.id).group_by(Delivery.status)).all())
    live = health.live_count(session, site)
    warnings, dismissed = health.split_dismissed(session, site, _warnings(session, site, live))
    if request.args.get("dismissed") == "shown":
        warnings, dismissed = warnings + dismissed, []
    published = get_store(current_app).current_generation(site.storage_key)
    return render_template("dashboard/site.html", site=site, runs=runs[:5], live=live,
                           chart=_url_chart(runs, live), outcomes=outcomes,
                           warnings=warnings, dismissed=dismissed,
                           scope_note=check_site_scope(site.base_url, site.sitemap_url),
                           published=published,
                           published_number=site_numbers(session, site.id, [published])
                           .get(published))


def _warnings(session, site: Site, live: int) -> list[health.Warning]:
    """What the overview's Health section names: the stored URLs' warnings, the last import's
    rejected rows and the engines that send nothing."""
    found = health.warnings(session, site, live)
    last_import = tasks.latest(session, "import", site.id)
    rejected = last_import["result"].get("rejected") if last_import else None
    if rejected:
        found.append(health.Warning(
            ngettext("The last import rejected %(num)d row", "The last import rejected %(num)d "
                     "rows", rejected),
            _after_first_line(last_import)[:2000],
            kind="import-rejected", fingerprint=health.fingerprint(last_import["id"])))
    return found + _blocked_engines(site)


def _after_first_line(task: dict) -> str:
    """A task's report without its first line (the counts), in the reader's language."""
    if task["said"]:
        return "\n".join(render(line) for line in task["said"][1:])
    return task["message"].split("\n", 1)[-1]


def _url_chart(runs: list[Generation], live: int) -> dict | None:
    """URLs over time: what each generation published (oldest first), then the live URLs now."""
    numbers = site_numbers(get_session(), runs[0].site_id, [run.id for run in runs]) \
        if runs else {}
    published = [(run.started_at, run.url_count,
                  _("Published by generation #%(id)s", id=numbers.get(run.id, run.id)),
                  "published") for run in reversed(runs) if run.status in ("succeeded", "unchanged")]
    return charts.line_chart(published + [(utcnow(), live, _("Live URLs now"), "live")])


def _blocked_engines(site: Site) -> list[health.Warning]:
    """A warning for each engine that is set up but sends nothing, and why."""
    return [health.Warning(_("%(engine)s is set up but sends nothing",
                             engine=notify.ENGINES[name].NAME),
                           _("Not sent: %(reason)s.", reason=reason),
                           kind=f"engine-{name}", fingerprint=health.fingerprint(in_english(reason)))
            for name, reason in notify.blocked(site, current_app.config).items()]




@bp.route("/sites/<slug>/delete", methods=["GET", "POST"])
@require("editor")
def site_delete(slug):
    site = load_site(slug)
    if request.method == "POST":
        if request.form.get("confirm") != site.slug:
            flash(_("Type %(slug)s to confirm.", slug=site.slug))
            return redirect(url_for("dashboard.site_delete", slug=slug))
        session = get_session()
        try:
            delete_site(session, site, utcnow(), get_store(current_app))
        except InvalidValue as exc:
            flash(str(exc))
            return redirect(url_for("dashboard.site", slug=slug))
        session.commit()
        flash(_("Deleted %(site)s.", site=site.name))
        return redirect(url_for("dashboard.sites"))
    return render_template("dashboard/site_delete.html", site=site)


def _start(kind: str, slug: str, **arguments):
    """Record the work and send the person to its progress page; workers do it."""
    site = load_site(slug)
    session = get_session()
    task_id = tasks.start(session, current_app._get_current_object(), kind, site, **arguments)
    session.commit()
    return redirect(url_for("dashboard.task", task_id=task_id))


@bp.post("/sites/<slug>/regenerate")
@require("editor")
def site_regenerate(slug):
    return _start("regenerate", slug, trigger="button")


@bp.post("/sites/<slug>/notify")
@require("editor")
def site_notify(slug):
    return _start("notify", slug)


@bp.post("/sites/<slug>/preflight")
@require("editor")
def site_preflight(slug):
    return _start("pre-flight check", slug)


@bp.post("/sites/<slug>/publish/test")
@require("editor")
def site_setup_check(slug):
    """"Test my setup" on the How to publish page: a worker fetches what crawlers fetch."""
    return _start("setup check", slug)
