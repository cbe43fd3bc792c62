"""A site's settings page and what hangs off it: the live previews (schedule, robots.txt), the
Search Console service account (admins only), the IndexNow key file check and key rotation,
and the "How to publish" page."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from babel.dates import format_datetime
from flask import (current_app, flash, get_flashed_messages, jsonify, redirect,
                   render_template, request, url_for)
from flask_babel import get_locale
from flask_babel import gettext as _
from flask_login import current_user
from sqlalchemy import select

from webapp import notify
from webapp.db import get_session
from webapp.errors import InvalidValue, NotAllowed, each_error
from webapp.models import Site, utcnow
from webapp.protocol import origin
from webapp.schedules import picker as schedule_picker
from webapp.sitemaps import get_store, sectioned
from webapp.sites import (SETTINGS, publish_guide, setting_fields, setup_check, site_settings,
                          update_site)
from webapp.urls import Rules, health, over_cost
from webapp.views.auth import demand, require
from webapp.views.dashboard import bp, load_site
from webapp.views.public import robots_txt_preview


def _when(moment: datetime, timezone: str) -> str:
    """A run time on the site's clock, in the reader's language."""
    return format_datetime(moment, "yyyy-MM-dd (EEE) HH:mm zzz", tzinfo=ZoneInfo(timezone),
                           locale=get_locale())


def _robots_preview(site: Site, written: str | None) -> str:
    """The robots.txt the site's host will serve with `written` as the site's text."""
    host = origin(site.base_url) + "/"
    sites = get_session().scalars(select(Site).where(Site.base_url.startswith(
        host, autoescape=True)).order_by(Site.id)).all()
    return robots_txt_preview(sites, get_store(current_app), site.id, written)


def _page(site: Site, values: dict, errors: dict[str, str], picker: dict[str, str],
          status: int = 200, **panels):
    runs = schedule_picker.upcoming(site.schedule, site.timezone, utcnow())
    robots = _robots_preview(site, site.robots_txt)
    return render_template(
        "dashboard/site_settings.html", site=site, values=values, errors=errors,
        fields=setting_fields.FIELDS, sections=setting_fields.SECTIONS,
        timezones=setting_fields.timezones(), picker=picker, modes=schedule_picker.MODES,
        weekdays=schedule_picker.WEEKDAYS, runs=[_when(run, site.timezone) for run in runs],
        robots_preview=robots, sitemap_line=f"Sitemap: {site.sitemap_url}" in robots,
        account=site.service_account, key_location=notify.indexnow.key_location(site),
        excluded_stored=health.excluded_stored(get_session(), site, scan=health.EXCLUDED_SCAN)[0],
        costly_rules=over_cost(Rules.of(site).exclude),
        section_counts=_section_counts(site), **panels), status


def _section_counts(site: Site) -> tuple[dict[str, int] | None, bool]:
    """How many live URLs each section holds: matched now on a site small enough, else as
    the last generation assigned them (True), or None when not known until the next one."""
    session = get_session()
    found = sectioned.matching_now(session, site, site.sections)
    if found is not None or not site.sections:
        return found, False
    if site.sections_assigned != site.sections:
        return None, False
    return {name: n for name, n in sectioned.counts(session, site).items()
            if name is not None}, True


@bp.route("/sites/<slug>/settings", methods=["GET", "POST"])
@require("viewer")
def site_settings_page(slug):
    site = load_site(slug)
    if request.method == "GET":
        return _page(site, setting_fields.shown(site), {}, schedule_picker.state(site.schedule),
                     key_check=_flashed_key_check(site))
    demand("editor")  # viewers may look, not change
    session = get_session()
    errors: list[InvalidValue] = []
    stored, changes = site_settings(site), {}
    for name in SETTINGS:
        try:
            text = setting_fields.form_text(name, request.form)
        except InvalidValue as exc:
            errors.append(exc)
            continue
        if text is not None and text != stored[name]:
            changes[name] = text
    refused, rules_before = False, site.exclude
    try:
        warning = update_site(session, site, changes, operator=current_user.can("admin"))
    except InvalidValue as exc:
        refused = isinstance(exc, NotAllowed)
        errors += each_error(exc)
    if errors:
        session.rollback()
        picker = (schedule_picker.from_form(request.form) if "schedule_mode" in request.form
                  else schedule_picker.state(request.form.get("schedule", site.schedule)))
        return _page(site, setting_fields.posted(setting_fields.shown(site), request.form),
                     {error.field: str(error) for error in errors}, picker,
                     403 if refused else 422)
    session.commit()
    flash(_("Saved.") if changes else _("Nothing changed."))
    if warning:
        flash(_("Note: %(warning)s", warning=warning))
    for name, reason in notify.blocked(site, current_app.config).items():
        flash(_("Note: %(engine)s is set up but sends nothing. Not sent: %(reason)s.",
                engine=notify.ENGINES[name].NAME, reason=reason))
    if site.exclude != rules_before:
        _flash_excluded_stored(session, site)
    return redirect(url_for("dashboard.site_settings_page", slug=site.slug))


def _flash_excluded_stored(session, site: Site) -> None:
    """Rules apply to URLs as they come in: say how many stored ones the new rules match."""
    counts = health.excluded_stored(session, site, scan=health.EXCLUDED_SCAN)[0]
    if counts:
        flash(_("Note: %(n)s stored URLs match the new exclusion rules. They stay in the "
                "sitemap until you delete them (Discover page).", n=counts.total()))


@bp.get("/sites/<slug>/settings/schedule-preview")
@require("viewer")
def settings_schedule_preview(slug):
    """The schedule the picker's fields make and its next three runs, for the page's script."""
    load_site(slug)
    timezone = request.args.get("timezone", "UTC")
    try:
        schedule = schedule_picker.compose(request.args)
        runs = schedule_picker.upcoming(schedule, timezone, utcnow())
    except InvalidValue as exc:
        return jsonify(schedule=None, runs=[], error=str(exc))
    return jsonify(schedule=schedule, runs=[_when(run, timezone) for run in runs],
                   error=None if runs else _("Off: the site regenerates only after changes."))


@bp.post("/sites/<slug>/settings/robots-preview")
@require("viewer")
def settings_robots_preview(slug):
    """The robots.txt that would be served with the text being edited, for the page's script."""
    site = load_site(slug)
    rule, show = SETTINGS["robots_txt"]
    try:
        written = rule(show(request.form.get("robots_txt", "").replace("\r\n", "\n")))
    except InvalidValue as exc:
        return jsonify(text=None, error=str(exc))
    return jsonify(text=_robots_preview(site, written or ""), error=None)


@bp.post("/sites/<slug>/search-console-key")
@require("admin")
def gsc_key_upload(slug):
    """An admin uploads the service account's JSON key file: checked, sealed, never shown."""
    site = load_site(slug)
    upload = request.files.get("key_file")
    data = upload.read(notify.gsc_account.MAX_KEY_FILE + 1) if upload else b""
    try:
        if not data:
            raise notify.gsc_account.AccountProblem(_("Choose the JSON key file to upload."))
        info = notify.gsc_account.read_key_file(data, current_app.config)
    except notify.gsc_account.AccountProblem as exc:
        return _page(site, setting_fields.shown(site), {}, schedule_picker.state(site.schedule),
                     422, key_file_error=str(exc))
    session = get_session()
    notify.gsc_account.store(session, site, info, current_app.config, utcnow())
    session.commit()
    flash(_("The key of %(email)s is stored, encrypted. It will not be shown again.",
            email=info["client_email"]))
    return redirect(url_for("dashboard.site_settings_page", slug=slug) + "#search-console")


@bp.post("/sites/<slug>/search-console-key/delete")
@require("admin")
def gsc_key_remove(slug):
    site = load_site(slug)
    session = get_session()
    notify.gsc_account.remove(session, site)
    session.commit()
    flash(_("The uploaded service-account key is removed."))
    return redirect(url_for("dashboard.site_settings_page", slug=slug) + "#search-console")


@bp.post("/sites/<slug>/search-console-key/test")
@require("admin")
def gsc_key_test(slug):
    """A real token exchange and the properties the account sees, shown on the page."""
    site = load_site(slug)
    try:
        email, properties = notify.gsc_account.test_connection(site, current_app.config)
    except notify.gsc_account.AccountProblem as exc:
        result = {"ok": False, "message": str(exc)}
    else:
        result = {"ok": True, "email": email, "properties": properties}
    return _page(site, setting_fields.shown(site), {}, schedule_picker.state(site.schedule),
                 gsc_test=result)


@bp.post("/sites/<slug>/indexnow/verify")
@require("editor")
def indexnow_verify(slug):
    """Fetch the key file as an engine would and say what is wrong, on the settings page it
    redirects to (so that reloading it does not post again)."""
    site = load_site(slug)
    check = notify.indexnow.verify_key_file(site, current_app.config)
    flash(check.message, KEY_CHECK + check.outcome)
    return redirect(url_for("dashboard.site_settings_page", slug=slug, _anchor="indexnow-key"))


KEY_CHECK = "key-check:"  # the category of the flashed result of "Verify key file"


def _flashed_key_check(site: Site) -> notify.indexnow.KeyFileCheck | None:
    """The result "Verify key file" left for this page, shown in its panel (not in the
    page's list of messages, which shows the default category only)."""
    for category, message in get_flashed_messages(with_categories=True):
        if category.startswith(KEY_CHECK):
            return notify.indexnow.KeyFileCheck(category.removeprefix(KEY_CHECK),
                                                notify.indexnow.key_location(site), message)
    return None


@bp.post("/sites/<slug>/rotate-key")
@require("editor")
def site_rotate_key(slug):
    site = load_site(slug)
    session = get_session()
    update_site(session, site, {"indexnow_key": "new"})
    session.commit()
    flash(_("A new IndexNow key is in place and served now; the old one is no longer valid."))
    return redirect(url_for("dashboard.site_settings_page", slug=slug))


@bp.get("/sites/<slug>/publish")
@require("viewer")
def site_publish(slug):
    """How to publish: the addresses this app serves for the site, proxy snippets for the
    site's host, and the robots.txt it will serve."""
    site = load_site(slug)
    app_url = request.host_url.rstrip("/")
    published = get_store(current_app).published(site.storage_key)
    return render_template(
        "dashboard/site_publish.html", site=site, app_url=app_url,
        files=sorted(published.files) if published else [],
        entry=site.sitemap_url.rsplit("/", 1)[-1],
        hosts=publish_guide.host_paths(site),
        key_location=notify.indexnow.key_location(site),
        nginx=publish_guide.nginx(site, app_url), caddy=publish_guide.caddy(site, app_url),
        robots_preview=_robots_preview(site, site.robots_txt), max_files=setup_check.MAX_FILES)
