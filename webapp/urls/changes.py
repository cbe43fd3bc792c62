"""Change tracking: which URLs of a site were added, changed or deleted, in commit order.

Every transaction that writes URLs of a site first raises the site's `change_seq` and stamps
the URLs it writes with the new value; one that adds or deletes URLs also moves the site's
`url_count` by as many (`count_live`). The UPDATE locks the site's row until that transaction
ends, so a transaction holding a higher number always commits after every lower one: a reader
that has handed out everything up to N never sees a change below N appear later.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from blinker import Namespace
from sqlalchemy import and_, func, or_, select, text, update
from sqlalchemy.orm import Session

from webapp import many_rows
from webapp.db import after_commit
from webapp.models import Site, Url, utcnow

# Sent with (app, site_id=...) once a transaction that changed URLs of the site has
# committed: the work queue listens, to regenerate the site soon.
urls_changed = Namespace().signal("urls-changed")


def next_change_seq(session: Session, site_id: int) -> int:
    """A new change number for the URLs this transaction writes in the site."""
    now = utcnow()
    seq = session.execute(
        update(Site).where(Site.id == site_id)
        .values(change_seq=Site.change_seq + 1, changed_at=now,
                pending_since=func.coalesce(Site.pending_since, now))
        .returning(Site.change_seq).execution_options(synchronize_session=False)
    ).scalar_one()
    _tell_after_commit(session, site_id)
    return seq


def _tell_after_commit(session: Session, site_id: int) -> None:
    """Send `urls_changed` for the site once this transaction commits (once per transaction)."""
    told = session.info.setdefault("urls_changed", set())
    key = (id(session.get_transaction()), site_id)
    app = session.info.get("app")
    if key in told or app is None:
        return
    told.add(key)

    def tell() -> None:
        told.discard(key)
        urls_changed.send(app, site_id=site_id)

    after_commit(session, tell)


def count_live(session: Session, site_id: int, delta: int) -> None:
    """Keep the site's url_count right: `delta` of its URLs became live (negative: deleted).

    Called by the transaction that wrote them, after next_change_seq has locked the site's
    row, so concurrent writers add their deltas one after the other."""
    if delta:
        session.execute(update(Site).where(Site.id == site_id)
                        .values(url_count=Site.url_count + delta))


def hold_site(session: Session, site_id: int) -> None:
    """Wait until no other transaction writes the site's URLs, then keep them from doing so
    until this one ends, without taking a change number: what this transaction reads of the
    site's URLs afterwards stays true until it commits (two writers adding the same new URL
    then never both insert it)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(Site.id).where(Site.id == site_id).with_for_update())
    else:  # SQLite: a write takes the database's write lock, and a no-op write changes nothing
        session.execute(text("UPDATE sites SET change_seq = change_seq WHERE id = :id"),
                        {"id": site_id})


def committed_change_seq(session: Session, site_id: int) -> int:
    """The site's change number as committed: every change up to it is visible."""
    return session.scalar(select(Site.change_seq).where(Site.id == site_id)) or 0


def changed_locs(session: Session, site_id: int, after: int, upto: int,
                 batch: int = 10_000) -> Iterator[str]:
    """Locs of URLs added, changed or deleted with a change number in (after, upto]."""
    rows = session.execute(
        select(Url.loc).where(Url.site_id == site_id, Url.change_seq > after,
                              Url.change_seq <= upto).order_by(Url.change_seq, Url.id)
        .execution_options(yield_per=batch))
    for (loc,) in rows:
        yield loc


# Ranges per statement on SQLite, where each is a term of one OR (its depth is bounded).
SQLITE_RANGES = 200


def changed_locs_many(session: Session, ranges: Sequence[tuple[int, int, int]],
                      batch: int = 10_000) -> Iterator[tuple[int, str]]:
    """`changed_locs` for many sites at once, at most one range (site id, after, upto) per
    site: (site id, loc), a site's in the order `changed_locs` gives them, sites in id order."""
    if not ranges:
        return
    if many_rows.on_postgresql(session):
        kind = Url.change_seq.type
        source = many_rows.arrays({"site": Url.site_id.type, "after": kind, "upto": kind}, [
            {"site": site_id, "after": after, "upto": upto} for site_id, after, upto in ranges])
        queries = [select(Url.site_id, Url.loc).join(source, and_(
            Url.site_id == source.c.site, Url.change_seq > source.c.after,
            Url.change_seq <= source.c.upto))]
    else:
        ordered = sorted(ranges)
        queries = [select(Url.site_id, Url.loc).where(or_(*(
            and_(Url.site_id == site_id, Url.change_seq > after, Url.change_seq <= upto)
            for site_id, after, upto in ordered[start:start + SQLITE_RANGES])))
            for start in range(0, len(ordered), SQLITE_RANGES)]
    for query in queries:
        yield from session.execute(query.order_by(Url.site_id, Url.change_seq, Url.id)
                                   .execution_options(yield_per=batch))
