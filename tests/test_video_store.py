"""Storing a URL's videos: a change to them is a change of the URL; the same ones are not."""

from __future__ import annotations

from sqlalchemy import select

from tests.builders import make_site, make_urls
from webapp.models import Site, Url, UrlVideo
from webapp.urls.video_store import videos_of, write_videos, write_videos_by_loc
from webapp.urls.videos import Video

FIRST = Video("https://shop.example.com/t/1.jpg", "One", "The first",
              content_loc="https://cdn.example.net/1.mp4", duration=60, rating=4.5,
              restriction_relationship="allow", restriction_countries="JP US",
              tags=("a", "b"))
SECOND = Video("https://shop.example.com/t/2.jpg", "Two", "The second",
               player_loc="https://shop.example.com/player/2", live=True)


def seqs(session, site):
    session.expire_all()
    return session.get(Site, site.id).change_seq, {
        url.loc: url.change_seq for url in session.scalars(select(Url))}


def test_videos_are_stored_in_order_and_read_back_equal(session):
    site = make_site(session)
    loc, = make_urls(session, site, 1)
    url = session.scalar(select(Url).where(Url.loc == loc))
    assert write_videos(session, url, [SECOND, FIRST])
    session.commit()
    assert videos_of(session, [url.id]) == {url.id: [SECOND, FIRST]}
    session.expire_all()
    assert [Video.from_row(row) for row in session.get(Url, url.id).videos] == [SECOND, FIRST]


def test_a_change_to_a_video_changes_the_url_and_the_same_videos_do_not(session):
    site = make_site(session)
    loc, other = make_urls(session, site, 2)
    url = session.scalar(select(Url).where(Url.loc == loc))
    write_videos(session, url, [FIRST])
    session.commit()
    before, stamps = seqs(session, site)
    assert stamps[loc] == before and stamps[other] == 0

    url = session.scalar(select(Url).where(Url.loc == loc))
    assert not write_videos(session, url, [FIRST])
    session.commit()
    assert seqs(session, site) == (before, stamps)

    url = session.scalar(select(Url).where(Url.loc == loc))
    assert write_videos(session, url, [Video(**{**FIRST.as_row(), "tags": ("a", "c")})])
    session.commit()
    after, changed = seqs(session, site)
    assert after > before and changed[loc] == after and changed[other] == 0

    url = session.scalar(select(Url).where(Url.loc == loc))
    assert write_videos(session, url, [])
    session.commit()
    assert session.scalar(select(UrlVideo.id)) is None
    assert seqs(session, site)[1][loc] > after


def test_videos_written_by_loc_stamp_only_the_changed_urls_with_one_number(session):
    site = make_site(session)
    locs = make_urls(session, site, 3)
    taken = []

    def take():
        taken.append(len(taken) + 100)
        return taken[-1]

    assert write_videos_by_loc(session, site, {locs[0]: [FIRST], locs[1]: [SECOND, FIRST]},
                               take) == {locs[0], locs[1]}
    assert write_videos_by_loc(session, site, {locs[0]: [FIRST], locs[1]: [SECOND]},
                               take) == {locs[1]}
    session.commit()
    assert taken == [100, 101]
    assert seqs(session, site)[1] == {locs[0]: 100, locs[1]: 101, locs[2]: 0}
