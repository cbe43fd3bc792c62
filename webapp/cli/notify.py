"""`flask notify SITE` and `flask notifications ...`: announce changes, read and retry the ledger."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup
from sqlalchemy import select

from webapp import notify
from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.errors import NotFound
from webapp.models import Delivery, utcnow
from webapp.sites import find_site

group = AppGroup("notifications", help="The delivery ledger: every announcement and its outcome.")


def describe(delivery: Delivery) -> str:
    """One line: id, engine, what was sent, where it stands and what the answer meant."""
    what = f"{delivery.url_count} URLs" if delivery.engine == "indexnow" else "sitemap"
    state = delivery.status
    if delivery.status == "pending" and delivery.attempts:
        state = f"retry at {delivery.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC"
    tries = "1 attempt" if delivery.attempts == 1 else f"{delivery.attempts} attempts"
    line = f"#{delivery.id}\t{delivery.engine}\t{what}\t{state}\t{tries}"
    return f"{line}\t{delivery.outcome}" if delivery.outcome else line


def report(ids: list[int]) -> bool:
    """Print the records; False when any of them failed for good, or was not sent because
    of this server's own settings (it waits, its outcome naming the setting)."""
    with session_scope() as session:
        deliveries = session.scalars(select(Delivery).where(Delivery.id.in_(ids))
                                     .order_by(Delivery.id)).all()
        for delivery in deliveries:
            click.echo(describe(delivery))
        return all(delivery.status != "failed" and not notify.is_held(delivery)
                   for delivery in deliveries)


def announce_and_deliver(site_id: int, hold: frozenset[str] = frozenset()) -> bool:
    planned, attempted = notify.notify_site(site_id, hold=hold)
    ids = sorted(set(planned) | set(attempted))
    if not ids:
        click.echo("nothing to announce")
        return True
    return report(ids)


@click.command("notify")
@click.argument("site_ref", metavar="SITE")
@click.option("--preflight", "preflight_check", is_flag=True,
              help="First fetch the key file and robots.txt; hold IndexNow back while its key "
              "file is not served.")
@friendly_errors
def notify_command(site_ref, preflight_check):
    """Announce what SITE's published sitemaps changed, and send what is due."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        site_id = site.id
    findings = notify.preflight.check(site, current_app.config) if preflight_check else []
    for finding in findings:
        click.echo(f"{'ok' if finding.ok else 'problem'}: {finding.message}")
    hold = frozenset(f.engine for f in findings if f.engine and not f.ok)
    if hold:
        click.echo(f"holding back {', '.join(sorted(hold))} until that is fixed")
    if not announce_and_deliver(site_id, hold):
        raise SystemExit(1)


@group.command("list")
@click.argument("site_ref", metavar="SITE")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--status", type=click.Choice(["pending", "sending", "delivered", "accepted",
                                             "failed"]))
@friendly_errors
def notifications_list(site_ref, limit, status):
    """The latest announcements of SITE, newest first."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        query = select(Delivery).where(Delivery.site_id == site.id)
        if status:
            query = query.where(Delivery.status == status)
        deliveries = session.scalars(query.order_by(Delivery.id.desc()).limit(limit)).all()
        if not deliveries:
            click.echo("no announcements yet")
        for delivery in deliveries:
            click.echo(describe(delivery))


@group.command("retry")
@click.argument("delivery_id", type=click.IntRange(1, 2**31 - 1), metavar="ID")
@friendly_errors
def notifications_retry(delivery_id):
    """Send announcement ID again now, with a fresh allowance of attempts."""
    with session_scope() as session:
        delivery = session.get(Delivery, delivery_id)
        if delivery is None:
            raise NotFound(f"there is no announcement #{delivery_id}")
        notify.retry(session, delivery, current_app.config, utcnow())
    notify.deliver(only=frozenset({delivery_id}))
    if not report([delivery_id]):
        raise SystemExit(1)
