"""Random video data: each video is either refused naming its field and rule, or published into
files valid by sitemap-video.xsd that read back (by the app's own sitemap reader) as exactly
what was stored."""

from __future__ import annotations

from collections import Counter
from datetime import date

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from lxml import etree
from sqlalchemy import select

from tests.builders import make_site
from tests.sitemap_schema import URLSET, parse
from tests.test_generate import published
from webapp import jobs
from webapp.errors import InvalidValue, each_error
from webapp.models import Site, Url
from webapp.outbound import Policy
from webapp.sitemaps.build import URLSET_CLOSE, url_fragment, urlset_open
from webapp.sitemaps.videos import video_fragment
from webapp.urls import save_url
from webapp.urls.sitemap_reader import read_sitemap
from webapp.urls.video_reader import LINE
from webapp.urls.video_store import videos_of, write_videos
from webapp.urls.videos import VIDEO_FIELDS, Video, normalize_video

PAGE = "https://shop.example.com/watch/1"
POLICY = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": ""})
PIECES = ["&", "<", ">", '"', "'", "]]>", "\r\n", "\r", "\n", "\t", " ", "\x00", "\x07", "\x0b",
          "\x7f", "\x85", "\u2028", "\ufffe", "\ud800", "\u3000", "é", "動画", "\U0001f600"]
TEXT = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=5)), max_size=12).map("".join),
    st.integers(90, 110).map(lambda n: "t" * n),
    st.integers(2040, 2060).map(lambda n: "d" * n),
    st.integers(250, 260).map(lambda n: "u" * n),
)
URL = st.one_of(
    st.sampled_from([PAGE, PAGE + "#t=10", "https://shop.example.com/t/1.jpg",
                     "https://cdn.example.net/v/1.mp4?a=1&b='2'", "https://www.shop.example.com/u",
                     "https://elsewhere.example.org/u", "http://shop.example.com/p/ü é",
                     "ftp://shop.example.com/x", "relative/path", "https://x", ""]),
    st.text(max_size=20).map(lambda tail: "https://shop.example.com/" + tail),
)
WHOLE = st.one_of(st.integers(-3, 30_000), st.integers(), st.sampled_from(
    ["600", " 42 ", "1.5", "1e3", "", "abc", 7.0, 7.5, True]))
RATING = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-1, 6),
                   st.sampled_from(["4.2", "5", "5.01", ".5", "-0", "x", "1e-7", True]))
DATES = st.sampled_from(["2026-01-02", "2026-01-02T10:00:00+09:00", "2026", "2026-07",
                         "2026-02-30", "2026-01-02T25:00:00Z", "yesterday", "", date(2027, 1, 1),
                         "2026-01-02T10:00+05:30", 20260102])
YES_NO = st.sampled_from([True, False, "yes", "No", "TRUE", "maybe", 1, "", None])
RELATIONSHIP = st.sampled_from(["allow", "deny", "Deny", "block", "", None])
COUNTRIES = st.one_of(st.lists(st.sampled_from(["JP", "us", "GB", "XX", "JPN", "", "de"]),
                               max_size=4).map(" ".join),
                      st.lists(st.sampled_from(["FR", "it"]), max_size=3), st.none())
PLATFORMS = st.one_of(st.lists(st.sampled_from(["web", "mobile", "TV", "desktop", ""]),
                               max_size=4).map(" ".join), st.none())
TAGS = st.one_of(st.lists(TEXT, max_size=34), st.none(), st.just("one"), st.just(5))

FIELD_VALUES = {
    "thumbnail_loc": URL, "title": TEXT, "description": TEXT, "content_loc": URL,
    "player_loc": URL, "duration": WHOLE, "expiration_date": DATES, "rating": RATING,
    "view_count": WHOLE, "publication_date": DATES, "family_friendly": YES_NO,
    "restriction_relationship": RELATIONSHIP, "restriction_countries": COUNTRIES,
    "platform_relationship": RELATIONSHIP, "platforms": PLATFORMS,
    "requires_subscription": YES_NO, "uploader": TEXT, "uploader_info": URL, "live": YES_NO,
    "tags": TAGS,
}
ANY = st.fixed_dictionaries(
    {"thumbnail_loc": URL, "title": TEXT, "description": TEXT},
    optional={**{name: values for name, values in FIELD_VALUES.items()
                 if name not in ("thumbnail_loc", "title", "description")},
              "category": st.just("cooking")})
# Values that meet the rules, so that many videos get through and the writing is tested too.
XML_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\x01"
                                 "\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13"
                                 "\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\ufffe\uffff"),
                   min_size=1, max_size=60).filter(str.strip)
GOOD_URL = st.one_of(st.sampled_from(["https://shop.example.com/t/1.jpg",
                                      "https://cdn.example.net/v/1.mp4?a=1&b='2'",
                                      "http://shop.example.com/p/ü é#frag"]),
                     XML_TEXT.map(lambda tail: "https://cdn.example.net/" + tail))
GOOD = {
    "content_loc": GOOD_URL, "player_loc": GOOD_URL, "duration": st.integers(1, 28_800),
    "expiration_date": DATES.filter(lambda d: d in ("2026-01-02", "2026", date(2027, 1, 1),
                                                    "2026-01-02T10:00:00+09:00")),
    "rating": st.floats(0.0, 5.0), "view_count": st.integers(0, 2**63 - 1),
    "publication_date": st.sampled_from(["2026-07", "2026-01-02T10:00+05:30"]),
    "family_friendly": st.booleans(), "requires_subscription": st.sampled_from(["yes", "NO"]),
    "live": st.booleans(), "tags": st.lists(XML_TEXT, max_size=32),
    "uploader": XML_TEXT.filter(lambda text: len(text.strip()) <= 255),
}


@st.composite
def good_videos(draw) -> dict:
    """A video by the rules, with a random choice of the optional fields."""
    raw = {"thumbnail_loc": draw(GOOD_URL), "title": draw(XML_TEXT),
           "description": draw(XML_TEXT), "content_loc": draw(GOOD_URL)}
    for name in draw(st.sets(st.sampled_from(sorted(GOOD)))):
        raw[name] = draw(GOOD[name])
    if draw(st.booleans()):
        raw["restriction_relationship"] = draw(st.sampled_from(["allow", "Deny"]))
        raw["restriction_countries"] = draw(st.lists(st.sampled_from(["JP", "us", "GB"]),
                                                     min_size=1, max_size=3))
    if draw(st.booleans()):
        raw["platform_relationship"] = "allow"
        raw["platforms"] = draw(st.sampled_from(["web", "mobile tv", "tv web"]))
    if "uploader" in raw and draw(st.booleans()):
        raw["uploader_info"] = "https://www.shop.example.com/u/1"
    return raw


@st.composite
def one_broken(draw) -> dict:
    """A video by the rules but for one field, given any value."""
    raw = draw(good_videos())
    name = draw(st.sampled_from(sorted(FIELD_VALUES)))
    raw[name] = draw(FIELD_VALUES[name])
    return raw


RAW = st.one_of(good_videos(), one_broken(), ANY)


def checked(raw: dict, field: str = "video") -> Video | None:
    """The video, or None when it is refused: then every error names a field of the video and
    a rule."""
    try:
        return normalize_video(raw, PAGE, field=field)
    except InvalidValue as exc:
        for error in each_error(exc):
            assert error.field == field or error.field.removeprefix(f"{field} ") in (
                *VIDEO_FIELDS, *raw), error.field
            assert error.rule and str(error)
        return None


def read_back(data: bytes) -> dict[str, list[Video]]:
    """Each URL's videos as the app's sitemap import reads the file; nothing left unread."""
    not_kept: Counter = Counter()
    found = {}
    for entry in read_sitemap(data, "sitemap.xml", {"shop.example.com"}, POLICY, not_kept):
        found[entry.fields["loc"]] = [
            normalize_video({k: v for k, v in raw.items() if k != LINE}, entry.fields["loc"])
            for raw in entry.videos]
    assert not not_kept
    return found


@settings(max_examples=600, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RAW, min_size=1, max_size=4))
def test_random_videos_are_refused_by_a_named_rule_or_written_valid_and_read_back(raws):
    videos = [video for n, raw in enumerate(raws, 1) if (video := checked(raw, f"video {n}"))]
    body = (urlset_open(videos=True) + url_fragment(
        PAGE, None, None, None, "".join(video_fragment(*video.as_row().values())
                                        for video in videos)) + URLSET_CLOSE).encode()
    URLSET.assertValid(etree.fromstring(body))
    assert read_back(body) == {PAGE: videos}


@settings(max_examples=25, database=None, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(RAW, min_size=1, max_size=3))
def test_stored_random_videos_are_published_as_stored(app, session, raws):
    # One site for every example, its videos replaced each time: each run then also starts
    # from the set the last one published (the namespace coming and going with the videos).
    videos = [video for raw in raws if (video := checked(raw))]
    session.rollback()
    site = session.scalar(select(Site)) or make_site(session)
    if session.scalar(select(Url.id).where(Url.loc == PAGE)) is None:
        save_url(session, site, PAGE)
        save_url(session, site, PAGE.replace("1", "2"))
    write_videos(session, session.scalar(select(Url).where(Url.loc == PAGE)), videos)
    session.commit()
    url_id = session.scalar(select(Url.id).where(Url.loc == PAGE))
    stored = videos_of(session, [url_id]).get(url_id, [])
    assert stored == videos

    jobs.regenerate(site.id, app)
    path = published(app, site)["sitemap.xml"]
    parse(path)  # valid by the schemas
    assert read_back(path.read_bytes()) == {PAGE: stored, PAGE.replace("1", "2"): []}
    session.expire_all()
