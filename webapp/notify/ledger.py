"""The delivery ledger: plan announcements from what changed, claim them, record each attempt.

Planning hands changes to an engine by writing delivery records and moving the engine's
cursor in one transaction, so a change is either in a record or still ahead of the cursor:
nothing is lost when the process stops in between. Delivery claims a record with a
conditional UPDATE, so two processes never send the same record at once.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime, timedelta
from types import ModuleType

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, in_english, rule_text, said_of
from webapp.models import Delivery, Generation, NotifyCursor, Site
from webapp.outbound import Answer, OutboundError, plain_reason
from webapp.said import said, said_plural
from webapp.urls import changed_locs, committed_change_seq

MAX_BACKOFF = timedelta(hours=6)
MAX_RETRY_AFTER = timedelta(days=1)
FINISHED = ("delivered", "accepted", "failed")


class PlanConflict(Exception):
    """Another process planned the same announcements first."""


def _position(session: Session, site_id: int, engine: str) -> int:
    cursor = session.get(NotifyCursor, (site_id, engine))
    return cursor.position if cursor else 0


def set_position(session: Session, site_id: int, engine: str, position: int,
                 expected: int | None = None) -> None:
    """Move an engine's cursor; with `expected`, only from that position (else PlanConflict)."""
    cursor = session.get(NotifyCursor, (site_id, engine))
    if cursor is None:
        session.add(NotifyCursor(site_id=site_id, engine=engine, position=position))
        session.flush()  # a concurrent planner's insert fails here or at commit
        return
    query = update(NotifyCursor).where(NotifyCursor.site_id == site_id,
                                       NotifyCursor.engine == engine)
    if expected is not None:
        query = query.where(NotifyCursor.position == expected)
    if session.execute(query.values(position=position)
                       .execution_options(synchronize_session=False)).rowcount != 1:
        raise PlanConflict(f"announcements for site {site_id} were planned elsewhere")
    session.expire(cursor)


def _latest(session: Session, site_id: int, statuses: tuple[str, ...]) -> Generation | None:
    return session.scalar(select(Generation).where(
        Generation.site_id == site_id, Generation.status.in_(statuses)
    ).order_by(Generation.id.desc()).limit(1))


def plan(session: Session, site: Site, engines: Mapping[str, ModuleType], config: dict,
         now: datetime) -> list[Delivery]:
    """Records for every enabled engine, for what the published sitemaps hold and it was not
    yet given. An engine that announces URLs gets those changed since its cursor, up to what
    the last generation saw; one that announces the sitemap gets it once per changed
    generation, once per target."""
    planned: list[Delivery] = []
    record = _recorder(session, site, config, now, planned)
    published = _latest(session, site.id, ("succeeded",))
    for name, engine in engines.items():
        if engine.ANNOUNCES == "urls":
            _plan_urls(session, site, name, engine, record)
        elif engine.targets(site):
            _plan_sitemap(session, site, name, published, engine.targets(site), record)
        else:
            _not_sent(session, site, name, published, engine.blocked(site, config), now, record)
    session.flush()
    return planned


def _recorder(session: Session, site: Site, config: dict, now: datetime,
              planned: list[Delivery]) -> Callable[..., Delivery]:
    """A function that adds a record (pending and due now, unless `fields` say otherwise)
    to the session and to `planned`."""
    def record(engine: str, **fields) -> Delivery:
        delivery = Delivery(**{"site_id": site.id, "engine": engine, "status": "pending",
                               "attempts": 0, "attempt_limit": config["NOTIFY_MAX_ATTEMPTS"],
                               "created_at": now, "next_attempt_at": now, **fields})
        session.add(delivery)
        planned.append(delivery)
        return delivery

    return record


def plan_locs(session: Session, site: Site, engines: Mapping[str, ModuleType],
              generation_id: int, locs: Iterable[str], config: dict,
              now: datetime) -> list[Delivery]:
    """Records of these URLs for every enabled engine that announces URLs, outside the change
    log and its cursors: what a rollback changed in the published files."""
    planned: list[Delivery] = []
    record = _recorder(session, site, config, now, planned)
    locs = list(locs)
    for name, engine in engines.items():
        if engine.ANNOUNCES == "urls" and engine.enabled(site):
            record_chunks(site, name, engine, generation_id, locs, record)
    session.flush()
    return planned


def record_chunks(site: Site, name: str, engine: ModuleType, generation_id: int,
                  locs: Iterable[str], record: Callable[..., object]) -> None:
    """Records of at most `engine.MAX_URLS` of `locs` each, of those the engine accepts."""
    chunk: list[str] = []
    for loc in locs:
        if engine.accepts(site, loc):
            chunk.append(loc)
        if len(chunk) == engine.MAX_URLS:
            record(name, generation_id=generation_id, url_count=len(chunk), urls="\n".join(chunk))
            chunk = []
    if chunk:
        record(name, generation_id=generation_id, url_count=len(chunk), urls="\n".join(chunk))


def not_sent(reason: object) -> str:
    """The outcome of a record that was never sent, and why (in English: the ledger's)."""
    return f"not sent: {in_english(reason)}"


def _not_sent(session: Session, site: Site, name: str, published: Generation | None,
              reason: str | None, now: datetime, record: Callable[..., Delivery]) -> None:
    """For an engine set up but unable to run (`reason`), a finished record that says so,
    once per published generation. The cursor stays: once the engine can run, the newest
    generation is announced to it after all."""
    if reason is None or published is None or published.id <= _position(session, site.id, name):
        return
    if session.scalar(select(Delivery.id).where(
            Delivery.site_id == site.id, Delivery.engine == name,
            Delivery.generation_id == published.id).limit(1)) is not None:
        return
    record(name, generation_id=published.id, status="failed", outcome=not_sent(reason),
           outcome_said=[said("not sent: %(reason)s", reason=said_of(reason))],
           next_attempt_at=None, finished_at=now)


def _plan_urls(session: Session, site: Site, name: str, engine: ModuleType,
               record: Callable[..., Delivery]) -> None:
    """Records of the URLs changed since the engine's cursor, up to what the last generation
    saw."""
    if not engine.enabled(site):
        return
    seen = _latest(session, site.id, ("succeeded", "unchanged"))
    start = _position(session, site.id, name)
    upto = seen.change_seq if seen is not None and seen.change_seq is not None else start
    if upto <= start:
        return
    record_chunks(site, name, engine, seen.id, changed_locs(session, site.id, start, upto),
                   record)
    set_position(session, site.id, name, upto, expected=start)


def _plan_sitemap(session: Session, site: Site, name: str, published: Generation | None,
                  targets: list[str | None], record: Callable[..., Delivery]) -> None:
    """A record per target for the newest published generation, if the engine has not had it."""
    start = _position(session, site.id, name)
    if published is None or published.id <= start or not targets:
        return
    for target in targets:
        record(name, generation_id=published.id, target=target)
    set_position(session, site.id, name, published.id, expected=start)


def start_from_now(session: Session, site_id: int, engine: str) -> None:
    """An engine turned on hears of changes from now on, not of every URL the site ever had."""
    set_position(session, site_id, engine, committed_change_seq(session, site_id))


def due(session: Session, now: datetime, lease: timedelta, site_id: int | None = None,
        hold: frozenset[str] = frozenset(), only: frozenset[int] | None = None,
        limit: int = 100, skip: Collection[int] = ()) -> list[int]:
    """Ids of records to send now: pending and due, or claimed by a sender that went quiet
    (but none of `skip`, records the caller already has in hand)."""
    query = select(Delivery.id).where(or_(
        and_(Delivery.status == "pending", Delivery.next_attempt_at <= now),
        and_(Delivery.status == "sending", Delivery.claimed_at < now - lease),
    )).order_by(Delivery.next_attempt_at, Delivery.id).limit(limit)
    if site_id is not None:
        query = query.where(Delivery.site_id == site_id)
    if hold:
        query = query.where(Delivery.engine.not_in(hold))
    if only is not None:
        query = query.where(Delivery.id.in_(only))
    if skip:
        query = query.where(Delivery.id.not_in(skip))
    return list(session.scalars(query))


def claim(session: Session, delivery_id: int, now: datetime, lease: timedelta) -> Delivery | None:
    """Take a record for one attempt; None when another sender has it or it is not due."""
    taken = session.execute(update(Delivery).where(Delivery.id == delivery_id, or_(
        and_(Delivery.status == "pending", Delivery.next_attempt_at <= now),
        and_(Delivery.status == "sending", Delivery.claimed_at < now - lease),
    )).values(status="sending", claimed_at=now, last_attempt_at=now,
              attempts=Delivery.attempts + 1).execution_options(synchronize_session=False))
    if taken.rowcount != 1:
        return None
    delivery = session.get(Delivery, delivery_id, populate_existing=True)
    return delivery


def _finish(session: Session, delivery: Delivery, **values) -> bool:
    """Record an attempt's end, unless the record was taken over meanwhile (lease expired)."""
    done = session.execute(update(Delivery).where(
        Delivery.id == delivery.id, Delivery.status == "sending",
        Delivery.attempts == delivery.attempts,  # a sender taking over counts an attempt
    ).values(claimed_at=None, target=delivery.target, **values)
        .execution_options(synchronize_session=False)).rowcount == 1
    session.expire(delivery)
    return done


def succeeded(session: Session, delivery: Delivery, answer: Answer, now: datetime) -> bool:
    return _finish(session, delivery, status="accepted" if answer.status == 202 else "delivered",
                   http_status=answer.status, outcome=answer.meaning,
                   outcome_said=None if answer.said is None else [answer.said],
                   response_excerpt=answer.excerpt, finished_at=now, next_attempt_at=None)


def backoff(attempts: int, base_seconds: float, retry_after: float | None,
            rng: random.Random | None = None) -> timedelta:
    """Exponential backoff with jitter (half to all of base * 2^(n-1), at most 6 hours); an
    engine's Retry-After, up to a day, when it asks for longer."""
    ceiling = min(timedelta(seconds=base_seconds * 2 ** (attempts - 1)), MAX_BACKOFF)
    delay = ceiling * (rng or random).uniform(0.5, 1.0)
    if retry_after is not None:
        # Capped as a number first: an engine may ask for more seconds than a timedelta holds.
        asked = min(retry_after, MAX_RETRY_AFTER.total_seconds())
        delay = max(delay, timedelta(seconds=asked))
    return delay


def failed(session: Session, delivery: Delivery, error: OutboundError, now: datetime,
           base_seconds: float, rng: random.Random | None = None) -> bool:
    """Schedule the next attempt when one can help and some are left, else give up."""
    fields = dict(http_status=error.status, response_excerpt=error.excerpt or None)
    # The English outcome keeps the technical detail for operators (the API, the CLI); the
    # dashboard shows `outcome_said`, the plain reason in the reader's language.
    meaning = f"{error.meaning} ({error.detail})" if error.detail else error.meaning
    plain = [error.said] if error.said is not None else None
    if error.permanent or delivery.attempts >= delivery.attempt_limit:
        outcome = meaning if error.permanent else re.sub(
            r"; will try again( later)?$", "", error.meaning) + \
            f"; gave up after {delivery.attempts} attempts (retry it when the engine is back)" + \
            (f" ({error.detail})" if error.detail else "")
        if plain is not None and not error.permanent:
            plain.append(said_plural("; gave up after %(num)s attempt (retry it when the engine "
                                     "is back)", "; gave up after %(num)s attempts (retry it "
                                     "when the engine is back)", delivery.attempts))
        return _finish(session, delivery, status="failed", outcome=outcome, outcome_said=plain,
                       finished_at=now, next_attempt_at=None, **fields)
    wait = backoff(delivery.attempts, base_seconds, error.retry_after, rng)
    if plain is not None:
        plain.append(said("; will try again"))
    return _finish(session, delivery, status="pending", outcome=meaning, outcome_said=plain,
                   next_attempt_at=now + wait, **fields)


def held(session: Session, delivery: Delivery, error: OutboundError, now: datetime,
         base_seconds: float) -> bool:
    """A record this server's own rules kept from being sent (`error.by_own_rules`: an address
    OUTBOUND_ALLOW refuses, a credential missing or one CREDENTIALS_KEY cannot open). Nothing
    reached the engine, so it is no failure and uses none of the record's attempts: it stays
    pending, its outcome "not sent: ..." naming the setting, and is tried again after as long
    as it has waited so far (NOTIFY_RETRY_SECONDS at least, 6 hours at most), by whichever
    process has the setting right (the workers) or by anyone once it is fixed."""
    wait = min(max(now - delivery.created_at, timedelta(seconds=base_seconds)), MAX_BACKOFF)
    return _finish(session, delivery, status="pending", attempts=delivery.attempts - 1,
                   outcome=not_sent(error.meaning),
                   outcome_said=[said("not sent: %(reason)s", reason=plain_reason(error))],
                   http_status=None, response_excerpt=None, next_attempt_at=now + wait)


def is_held(delivery: Delivery) -> bool:
    """Whether a record waits because this server's own rules kept it from being sent."""
    return delivery.status == "pending" and (delivery.outcome or "").startswith("not sent: ")


def retry(session: Session, delivery: Delivery, config: dict, now: datetime) -> None:
    """Send a failed (or waiting) record again now, with a fresh allowance of attempts."""
    if delivery.status in ("delivered", "accepted"):
        raise InvalidValue("notification", str(delivery.id), rule_text(
            "was delivered; there is nothing to retry"))
    if delivery.status == "sending":
        raise InvalidValue("notification", str(delivery.id), rule_text("is being sent right now"))
    changed = session.execute(update(Delivery).where(
        Delivery.id == delivery.id, Delivery.status == delivery.status,
        Delivery.attempts == delivery.attempts,  # nobody sent it since it was read
    ).values(status="pending", next_attempt_at=now, finished_at=None,
             attempt_limit=delivery.attempts + config["NOTIFY_MAX_ATTEMPTS"])
        .execution_options(synchronize_session=False)).rowcount
    session.expire(delivery)
    if changed != 1:
        raise InvalidValue("notification", str(delivery.id), rule_text(
            "changed while it was being retried; look at it again"))
