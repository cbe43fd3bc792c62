"""The URLs of a site: a list that stays fast at a million rows, editing, import and export."""

from __future__ import annotations

import gzip
import shutil
import tempfile

from flask import (
    Response,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_babel import format_number, ngettext
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy import select, tuple_

from webapp import tasks
from webapp.db import get_session, new_session
from webapp.errors import InvalidValue, each_error
from webapp.models import Site, Url
from webapp.protocol import CHANGEFREQS
from webapp.urls import (
    ENCODINGS,
    KEEP_NEWS,
    ImportFormatError,
    check_encoding_choice,
    check_source_url,
    check_url,
    csv_chunks,
    delete_urls,
    form_news,
    health,
    hreflang,
    news_notes,
    save_news,
    shown,
    starting_with,
    write_url,
)
from webapp.verify import health as verification
from webapp.views.auth import demand, require
from webapp.views.dashboard import bp, load_site, url_videos
from webapp.views.display import readable_url
from webapp.views.http import id_of

PAGE = 50
SORTS = {"loc": _l("URL (A to Z)"), "newest": _l("Newest first"), "lastmod": _l("Last modified")}
FIELDS = ("lastmod", "changefreq", "priority")


def _query(site, args):
    """The page's rows by keyset: each page starts after the last row of the one before."""
    status, sort, text = args.get("status", "live"), args.get("sort", "loc"), args.get("q", "")
    query = select(Url).where(Url.site_id == site.id)
    if status == "deleted":
        query = query.where(Url.deleted_at.is_not(None))
    elif status != "all":
        query = query.where(Url.deleted_at.is_(None))
    if text.strip():
        query = query.where(*starting_with(site, text))
    check = args.get("check")
    if check is not None:  # what the URL's last verification found (the Verification page)
        if check not in verification.CHECKS:
            abort(400, f"check must be one of {', '.join(verification.SHOWN)}; "
                       f"not {check[:40]!r}.")
        query = verification.with_check(query, check, site.id)
    try:  # the URLs a health warning counts (its "Show these URLs" link)
        query = query.where(*health.url_filter(site, args))
    except InvalidValue as exc:
        abort(400, str(exc))
    after = args.get("after", "")
    if sort == "newest":
        if id_of(after) is not None:
            query = query.where(Url.id < id_of(after))
        query = query.order_by(Url.id.desc())
    elif sort == "lastmod":
        query = query.where(Url.lastmod.is_not(None))
        lastmod, _, last_id = after.rpartition("|")
        if id_of(last_id) is not None:
            # A row-value comparison, which both databases answer from the (site, lastmod, id)
            # index; the same condition written with OR made SQLite scan.
            query = query.where(tuple_(Url.lastmod, Url.id) < tuple_(lastmod, id_of(last_id)))
        query = query.order_by(Url.lastmod.desc(), Url.id.desc())
    else:
        if after:
            query = query.where(Url.loc > after)
        query = query.order_by(Url.loc)
    return query.limit(PAGE + 1)


def _cursor(url: Url, sort: str) -> str:
    return {"newest": str(url.id), "lastmod": f"{url.lastmod}|{url.id}"}.get(sort, url.loc)


@bp.get("/sites/<slug>/urls")
@require("viewer")
def urls(slug):
    site = load_site(slug)
    rows = get_session().scalars(_query(site, request.args)).all()
    more = len(rows) > PAGE
    rows = rows[:PAGE]
    sort = request.args.get("sort", "loc")
    kept = {name: request.args[name]
            for name in ("q", "status", "sort", "check", "health", "lastmod") if name in request.args}
    next_args = {**kept, "after": _cursor(rows[-1], sort)} if more and rows else None
    return render_template("dashboard/urls.html", site=site, rows=rows, sorts=SORTS,
                           next_args=next_args, args=request.args, changefreqs=CHANGEFREQS,
                           errors={}, form={})


@bp.post("/sites/<slug>/urls")
@require("editor")
def url_add(slug):
    site = load_site(slug)
    session = get_session()
    form = request.form
    # Adding never erases: a field left empty keeps the value a URL already there has.
    given = {name: form[name] for name in FIELDS if form.get(name, "").strip()}
    try:
        saved = write_url(session, site, check_url(site, form.get("loc", ""), given))
    except InvalidValue as exc:
        session.rollback()
        rows = session.scalars(_query(site, {})).all()[:PAGE]
        return render_template("dashboard/urls.html", site=site, rows=rows, sorts=SORTS,
                               next_args=None, args={}, changefreqs=CHANGEFREQS,
                               errors=_by_field(exc), form=form), 422
    session.commit()
    for note in saved.notes:
        flash(_("Note: %(note)s.", note=note))
    if saved.created:
        flash(_("Added %(url)s.", url=readable_url(saved.url.loc, site.encoding)))
        return redirect(url_for("dashboard.urls", slug=slug))
    # It was there already: its page shows every value it has now.
    if not saved.changes:
        flash(_("%(url)s is already in this site with these values; nothing changed.",
                url=saved.url.loc))
    else:
        flash(_("Updated %(url)s, which was already in this site.",
                url=readable_url(saved.url.loc, site.encoding)))
        for name, (old, new) in saved.changes.items():
            flash(_("%(field)s changed from %(old)s to %(new)s.", field=LABELS[name],
                    old=shown(name, old), new=shown(name, new)))
    if len(given) < len(FIELDS):
        flash(_("The fields you left empty kept their stored values; change them here."))
    return redirect(url_for("dashboard.url_edit", slug=slug, url_id=saved.url.id))


LABELS = {"lastmod": _l("Last modified"), "changefreq": _l("Change frequency"),
          "priority": _l("Priority"), "images": _l("Images"), "alternates": _l("Language versions")}


def _by_field(exc: InvalidValue, videos: list[int] = ()) -> dict[str, str]:
    """Each field's error, under the name of the form field it belongs to (`videos`: the
    fieldset of each video checked, url_videos.form_key)."""
    names = {"image": "images", "alternate": "alternates"}
    return {url_videos.form_key(names.get(error.field, error.field), list(videos)): str(error)
            for error in each_error(exc)}


def _load_url(site, url_id: int) -> Url:
    url = get_session().get(Url, url_id)
    if url is None or url.site_id != site.id:
        abort(404, _("There is no such URL in this site."))
    return url


@bp.route("/sites/<slug>/urls/<id:url_id>", methods=["GET", "POST"])
@require("viewer")
def url_edit(slug, url_id):
    site = load_site(slug)
    url = _load_url(site, url_id)
    errors: dict[str, str] = {}
    form = request.form
    videos = url_videos.typed_from_url(url, site.encoding)
    if request.method == "POST":
        demand("editor")
        videos = url_videos.typed_from_form(form)
    if request.method == "POST" and "add_video" not in form:
        session = get_session()
        checked_videos, positions = url_videos.to_check(videos)
        try:
            article = form_news(form)
            saved = write_url(session, site, check_url(
                site, url.loc, {name: form.get(name) or None for name in FIELDS},
                images=[line for line in form.get("images", "").splitlines() if line.strip()],
                alternates=[line for line in form.get("alternates", "").splitlines()
                            if line.strip()], videos=checked_videos))
            if article is not KEEP_NEWS:
                save_news(session, site, url.loc, article)
        except InvalidValue as exc:
            session.rollback()
            errors = _by_field(exc, positions)
        else:
            session.commit()
            for note in (*saved.notes, *news_notes(article)):
                flash(_("Note: %(note)s.", note=note))
            flash(_("Saved %(url)s.", url=readable_url(url.loc, site.encoding)))
            return redirect(url_for("dashboard.url_edit", slug=slug, url_id=url_id))
    return render_template(
        "dashboard/url_edit.html", site=site, url=url, errors=errors, form=form,
        # Shown decoded: saving normalises them back to the same encoded URLs.
        changefreqs=CHANGEFREQS,
        images="\n".join(readable_url(image.loc, site.encoding) for image in url.images),
        alternates="\n".join(f"{a.hreflang}={readable_url(a.href, site.encoding)}"
                              for a in url.alternates),
        videos=videos, video_labels=url_videos.LABELS, video_help=url_videos.HELP,
        video_optional=url_videos.OPTIONAL, video_opened=url_videos.opened,
        news=url.news,
    ), 422 if errors else 200


@bp.post("/sites/<slug>/urls/delete")
@require("editor")
def urls_delete(slug):
    site = load_site(slug)
    ids = [id_of(value) for value in request.form.getlist("id") if id_of(value) is not None]
    session = get_session()
    count = delete_urls(session, site, ids)
    session.commit()
    flash(ngettext("Deleted %(count)s URL; the next generation leaves it out and announces "
                   "the removal.", "Deleted %(count)s URLs; the next generation leaves them out "
                   "and announces the removal.", count, count=format_number(count)))
    return redirect(url_for("dashboard.urls", slug=slug))


@bp.post("/sites/<slug>/urls/complete-hreflang")
@require("editor")
def urls_complete_hreflang(slug):
    site = load_site(slug)
    session = get_session()
    report = hreflang.complete(session, site)
    session.commit()
    flash(report.summary())
    for reason in report.skipped[:10]:
        flash(reason)
    return redirect(url_for("dashboard.site", slug=slug))


@bp.get("/sites/<slug>/urls.csv")
@require("viewer")
def urls_export(slug):
    site = load_site(slug)
    app = current_app._get_current_object()

    def rows():
        # A session of the stream's own: the request's is closed when the view returns, before
        # the body is sent. Closed here when the last row is sent or the client goes away.
        with new_session(app) as session:
            yield from csv_chunks(session, session.get(Site, site.id))

    return Response(rows(), mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="{site.slug}-urls.csv"'})


@bp.route("/sites/<slug>/import", methods=["GET", "POST"])
@require("viewer")
def urls_import(slug):
    site = load_site(slug)
    if request.method == "GET":
        return render_template("dashboard/import.html", site=site, error=None,
                               encodings=ENCODINGS, form={})
    demand("editor")
    upload, pasted = request.files.get("file"), request.form.get("pasted", "")
    source_url = request.form.get("sitemap_url", "").strip()
    try:
        # The choice is the uploaded file's: pasted text comes as UTF-8 whatever it says.
        encoding = check_encoding_choice(request.form.get("encoding", "utf-8")) \
            if upload is not None and upload.filename else "utf-8"
        payload = None if source_url else _compressed_upload(upload, pasted)
        if source_url:
            check_source_url(site, source_url)  # fetched by the worker, from the site's hosts
    except (ImportFormatError, InvalidValue) as exc:
        return render_template("dashboard/import.html", site=site, error=str(exc),
                               encodings=ENCODINGS, form=request.form), 422
    session = get_session()
    task_id = tasks.start(session, current_app._get_current_object(), "import", site,
                          payload=payload, source_url=source_url or None, encoding=encoding,
                          rewrite_origin=request.form.get("rewrite_origin") == "on")
    session.commit()
    return redirect(url_for("dashboard.task", task_id=task_id))


MAX_PAYLOAD = 256 << 20  # compressed bytes an upload may take to a worker in its task record


def _compressed_upload(upload, pasted: str) -> bytes:
    """What to import, gzip-compressed for the task's record: a worker on any machine reads it
    from there. Compressed as it is read, through a temporary file, never whole in memory
    uncompressed."""
    with tempfile.SpooledTemporaryFile(8 << 20) as spool:
        with gzip.GzipFile(fileobj=spool, mode="wb", compresslevel=5) as packed:
            if upload is not None and upload.filename:
                shutil.copyfileobj(upload.stream, packed, 1 << 20)
            elif pasted.strip():
                packed.write(pasted.encode("utf-8"))
            else:
                raise ImportFormatError(_("choose a file, paste some URLs, or give a "
                                          "sitemap's address"))
        if spool.tell() > MAX_PAYLOAD:
            raise ImportFormatError(_(
                "the file is %(size)s MB even compressed; the dashboard hands at most "
                "%(most)s MB to a worker: import it with `flask --app webapp urls import SITE "
                "FILE` on the server", size=spool.tell() >> 20, most=MAX_PAYLOAD >> 20))
        spool.seek(0)
        return spool.read()
