"""Videos in the published sitemaps: valid by sitemap-video.xsd, several per URL, the namespace
only where used, within the protocol's limits, incremental runs that rewrite only the file of a
changed video, and sitemap import that keeps them."""

from __future__ import annotations

import shutil

from lxml import etree
from sqlalchemy import select

from tests.builders import make_site, make_urls
from tests.sitemap_schema import NS, parse
from tests.test_generate import published
from tests.test_incremental import bodies
from tests.test_sitemap_import import HEAD, imported
from webapp import jobs
from webapp.models import Url
from webapp.sitemaps import get_store
from webapp.sitemaps.build import Limits, UrlsetWriter, url_fragment, urlset_open
from webapp.sitemaps.videos import video_fragment
from webapp.sites import update_site
from webapp.urls import delete_url, save_url
from webapp.urls.video_store import videos_of, write_videos
from webapp.urls.videos import Video, normalize_video

SHOP = "https://shop.example.com/"
FULL = {
    "thumbnail_loc": "https://shop.example.com/thumbs/123.jpg",
    "title": "Grilling steaks & <more>", "description": "Alkis shows you how\nto grill. 焼き方",
    "content_loc": "https://cdn.example.net/video123.mp4",
    "player_loc": "https://shop.example.com/player?video=123&x='1'", "duration": 600,
    "expiration_date": "2027-11-05T19:20:30+08:00", "rating": 4.2, "view_count": 12345,
    "publication_date": "2007-11-05", "family_friendly": True,
    "restriction_relationship": "allow", "restriction_countries": "IE GB US CA",
    "platform_relationship": "deny", "platforms": "tv", "requires_subscription": False,
    "uploader": "Grilly & Co", "uploader_info": "https://shop.example.com/users/grilly",
    "live": False, "tags": ["steak", "meat", "summer & outdoor"],
}
MINIMAL = {"thumbnail_loc": "https://shop.example.com/thumbs/345.jpg", "title": "Second",
           "description": "Only what is required", "player_loc": "https://shop.example.com/p/2"}
V = f"{{{NS['video']}}}"


def url_of(session, loc) -> Url:
    return session.scalar(select(Url).where(Url.loc == loc))


def with_videos(session, loc, *raws) -> list[Video]:
    videos = [normalize_video(raw, loc) for raw in raws]
    write_videos(session, url_of(session, loc), videos)
    session.commit()
    return videos


def test_every_field_is_published_in_the_schemas_order_and_valid(app, session):
    site = make_site(session)
    page, other = make_urls(session, site, 2)
    with_videos(session, page, FULL, MINIMAL)
    jobs.regenerate(site.id, app)

    root = parse(published(app, site)["sitemap.xml"])  # valid by sitemap-video.xsd
    first, second = root.xpath(f"sm:url[sm:loc='{page}']/video:video", namespaces=NS)
    assert [child.tag.removeprefix(V) for child in first] == [
        "thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration",
        "expiration_date", "rating", "view_count", "publication_date", "tag", "tag", "tag",
        "family_friendly", "restriction", "requires_subscription", "uploader", "platform", "live"]
    text = {child.tag.removeprefix(V): child.text for child in first}
    assert text["title"] == "Grilling steaks & <more>"
    assert text["player_loc"] == "https://shop.example.com/player?video=123&x='1'"
    assert (text["duration"], text["rating"], text["view_count"]) == ("600", "4.2", "12345")
    assert text["expiration_date"] == "2027-11-05T11:20:30+00:00"
    assert (text["family_friendly"], text["requires_subscription"], text["live"]) == (
        "yes", "no", "no")
    assert first.find(f"{V}restriction").attrib == {"relationship": "allow"}
    assert first.find(f"{V}uploader").get("info") == "https://shop.example.com/users/grilly"
    assert [tag.text for tag in first.iter(f"{V}tag")] == ["steak", "meat", "summer & outdoor"]
    assert [child.tag.removeprefix(V) for child in second] == [
        "thumbnail_loc", "title", "description", "player_loc"]
    assert root.xpath(f"sm:url[sm:loc='{other}']/video:video", namespaces=NS) == []


def test_the_video_namespace_is_declared_only_while_the_site_has_videos(app, session):
    site = make_site(session)
    page, _ = make_urls(session, site, 2)
    jobs.regenerate(site.id, app)
    assert "xmlns:video" not in published(app, site)["sitemap.xml"].read_text()

    with_videos(session, page, MINIMAL)
    jobs.regenerate(site.id, app)
    assert 'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"' in \
        published(app, site)["sitemap.xml"].read_text()

    write_videos(session, url_of(session, page), [])
    session.commit()
    jobs.regenerate(site.id, app)
    assert "xmlns:video" not in published(app, site)["sitemap.xml"].read_text()


def test_a_site_with_sections_publishes_its_videos_in_the_section_file(app, session):
    site = make_site(session)
    update_site(session, site, {"sections": "watch /watch/"})
    session.commit()
    save_url(session, site, SHOP + "watch/1")
    save_url(session, site, SHOP + "about")
    session.commit()
    with_videos(session, SHOP + "watch/1", FULL)
    jobs.regenerate(site.id, app)

    served = published(app, site)
    section = parse(served["sitemap-watch-1.xml"])  # valid by sitemap-video.xsd
    assert [v.findtext(f"{V}title") for v in section.iter(f"{V}video")] == [FULL["title"]]
    assert "xmlns:video" in served["sitemap-watch-1.xml"].read_text()


def test_a_changed_video_rewrites_only_its_file_and_the_same_one_rewrites_nothing(app, session):
    site = make_site(session, max_urls_per_file=10)
    pages = make_urls(session, site, 30)
    with_videos(session, pages[3], MINIMAL)
    with_videos(session, pages[15], MINIMAL)
    jobs.regenerate(site.id, app)
    before = bodies(app, site)

    with_videos(session, pages[15], MINIMAL)  # the same again: not a change
    assert jobs.regenerate(site.id, app).status == "unchanged"

    with_videos(session, pages[15], {**MINIMAL, "title": "Renamed"}, FULL)
    shutil.rmtree(get_store(app).bodies)  # the unchanged files are reused, not rewritten
    jobs.regenerate(site.id, app)
    after = bodies(app, site)
    assert {name for name in after if after[name] != before.get(name)} == {
        "sitemap-2.xml", "sitemap-2.xml.gz", "sitemap.xml", "sitemap.xml.gz"}
    files = published(app, site)
    titles = parse(files["sitemap-2.xml"]).xpath("//video:title/text()", namespaces=NS)
    assert titles == ["Renamed", "Grilling steaks & <more>"]
    assert parse(files["sitemap-1.xml"]).xpath("//video:title/text()", namespaces=NS) == \
        ["Second"]


def test_extensions_of_urls_between_the_sites_ids_stay_with_their_own_url(app, session):
    """A site's image, alternate and video rows are read by url id range: those of another
    site's URLs whose ids lie between the site's, and of deleted URLs, are left out."""
    shop = make_site(session, max_urls_per_file=2)
    blog = make_site(session, name="Blog", base_url="https://blog.example.com/",
                     max_urls_per_file=2)
    for n in range(6):
        for site in (shop, blog):  # ids interleave: shop, blog, shop, blog, ...
            loc = f"{site.base_url}p{n}"
            save_url(session, site, loc, images=[f"https://cdn.example.net/{site.name}{n}.jpg"],
                     alternates=[f"de={site.base_url}de/p{n}", f"en={loc}"])
            session.commit()
            with_videos(session, loc, {**MINIMAL, "title": f"{site.name} {n}"},
                        {**MINIMAL, "title": f"{site.name} {n} again"})
    delete_url(session, shop, f"{SHOP}p2")
    delete_url(session, blog, "https://blog.example.com/p0")
    session.commit()

    def extensions(site) -> list[tuple]:
        found = []
        for name, path in published(app, site).items():
            for url in parse(path).xpath("sm:url", namespaces=NS) if name.endswith(".xml") \
                    else ():  # the index has none
                found.append((url.findtext(f"{{{NS['sm']}}}loc"),
                              url.xpath("image:image/image:loc/text()", namespaces=NS),
                              url.xpath("xhtml:link/@hreflang", namespaces=NS),
                              url.xpath("video:video/video:title/text()", namespaces=NS)))
        return sorted(found)

    def expected(site, numbers) -> list[tuple]:
        return [(f"{site.base_url}p{n}", [f"https://cdn.example.net/{site.name}{n}.jpg"],
                 ["de", "en"], [f"{site.name} {n}", f"{site.name} {n} again"])
                for n in numbers]

    for site in (shop, blog):
        jobs.regenerate(site.id, app)
    assert extensions(shop) == expected(shop, [0, 1, 3, 4, 5])
    assert extensions(blog) == expected(blog, [1, 2, 3, 4, 5])

    # An incremental run reads the changed file's id range alone.
    with_videos(session, "https://blog.example.com/p4", {**MINIMAL, "title": "Blog 4"})
    with_videos(session, f"{SHOP}p4", {**MINIMAL, "title": "Shop 4"},
                {**MINIMAL, "title": "Shop 4 again"}, {**MINIMAL, "title": "Shop 4 third"})
    assert jobs.regenerate(shop.id, app).status == "succeeded"
    changed = expected(shop, [0, 1, 3, 4, 5])
    changed[3][3].append("Shop 4 third")
    assert extensions(shop) == changed


def test_files_with_videos_stay_within_the_byte_and_url_limits(tmp_path):
    video = normalize_video({**FULL, "description": "長い説明" * 500}, f"{SHOP}v")
    header = urlset_open(videos=True)
    fragment = url_fragment(f"{SHOP}v", None, None, None,
                            video_fragment(*video.as_row().values()) * 3)
    size = len(fragment.encode())
    max_bytes = len(header) + 2 * size + len("</urlset>\n")
    built = UrlsetWriter(tmp_path, "s", header, Limits(max_urls=3, max_bytes=max_bytes)).write(
        (n, fragment) for n in range(7))
    assert [f.url_count for f in built] == [2, 2, 2, 1]
    for f in built:
        assert (tmp_path / f.name).stat().st_size == f.bytes <= max_bytes
        parse(tmp_path / f.name)
    (tmp_path / "counted").mkdir()
    built = UrlsetWriter(tmp_path / "counted", "s", header, Limits(max_urls=3)).write(
        (n, fragment) for n in range(7))
    assert [f.url_count for f in built] == [3, 3, 1]


def sitemap_with_videos(origin: str = "https://shop.example.com") -> str:
    return HEAD + f"""  <url>
    <loc>{origin}/watch/1</loc>
    <video:video>
      <video:thumbnail_loc>{origin}/t/1.jpg</video:thumbnail_loc>
      <video:title>First</video:title>
      <video:description>
        Two lines &amp; more
      </video:description>
      <video:content_loc>https://cdn.example.net/1.mp4</video:content_loc>
      <video:player_loc allow_embed="yes" autoplay="ap=1">{origin}/player/1</video:player_loc>
      <video:duration>120</video:duration>
      <video:rating>3.5</video:rating>
      <video:publication_date>2026-01-02T10:00:00+09:00</video:publication_date>
      <video:tag>one</video:tag>
      <video:tag>two</video:tag>
      <video:category>cooking</video:category>
      <video:family_friendly>YES</video:family_friendly>
      <video:restriction relationship="deny">jp</video:restriction>
      <video:uploader info="{origin}/u/me">Me</video:uploader>
      <video:platform relationship="allow">web mobile</video:platform>
      <video:live>No</video:live>
    </video:video>
    <video:video>
      <video:thumbnail_loc>{origin}/t/2.jpg</video:thumbnail_loc>
      <video:title>Second</video:title>
      <video:description>Player only</video:description>
      <video:player_loc>{origin}/player/2</video:player_loc>
    </video:video>
    <video:video>
      <video:thumbnail_loc>{origin}/t/3.jpg</video:thumbnail_loc>
      <video:title>Too long</video:title>
      <video:description>Nine hours</video:description>
      <video:content_loc>https://cdn.example.net/3.mp4</video:content_loc>
      <video:duration>32400</video:duration>
    </video:video>
  </url>
  <url>
    <loc>{origin}/plain</loc>
  </url>
</urlset>
"""


def test_an_imported_sitemap_keeps_its_videos_and_names_the_ones_that_break_a_rule(
        app, session):
    site = make_site(session)
    text = sitemap_with_videos()
    report = imported(session, site, text)
    assert (report.added, report.rejected, report.videos_refused) == (2, 0, 1)
    third = [n for n, line in enumerate(text.splitlines(), 1) if "<video:video>" in line][2]
    summary = report.summary().splitlines()
    assert "video:category elements not kept (this app cannot publish them): 1" in summary
    assert "video:player_loc allow_embed elements not kept (this app cannot publish them): 1" \
        in summary
    assert report.english_notes() == [(third, (
        "video 3 duration '32400': must be a whole number of seconds from 1 to 28800 (8 hours) "
        "(the video was not kept; the URL was)"))]
    page = url_of(session, f"{SHOP}watch/1")
    assert videos_of(session, [page.id])[page.id] == [
        Video(f"{SHOP}t/1.jpg", "First", "Two lines & more", "https://cdn.example.net/1.mp4",
              f"{SHOP}player/1", 120, None, 3.5, None, "2026-01-02T01:00:00+00:00", True,
              "deny", "JP", "allow", "web mobile", None, "Me", f"{SHOP}u/me", False,
              ("one", "two")),
        Video(f"{SHOP}t/2.jpg", "Second", "Player only", player_loc=f"{SHOP}player/2")]

    again = imported(session, site, sitemap_with_videos())
    assert (again.updated, again.unchanged) == (0, 2)

    jobs.regenerate(site.id, app)
    root = parse(published(app, site)["sitemap.xml"])
    assert root.xpath("//video:video/video:title/text()", namespaces=NS) == ["First", "Second"]


def test_an_imported_video_follows_its_url_to_the_site_origin_when_asked(session):
    site = make_site(session)
    report = imported(session, site, sitemap_with_videos("http://old.example.com"),
                      rewrite_origin=True)
    assert (report.added, report.videos_refused) == (2, 1)
    page = url_of(session, f"{SHOP}watch/1")
    first = videos_of(session, [page.id])[page.id][0]
    assert (first.thumbnail_loc, first.player_loc, first.uploader_info) == (
        f"{SHOP}t/1.jpg", f"{SHOP}player/1", f"{SHOP}u/me")


def test_a_sitemap_without_the_videos_clears_them_and_counts_the_url_updated(session):
    site = make_site(session)
    imported(session, site, sitemap_with_videos())
    without = imported(session, site, HEAD + """  <url><loc>https://shop.example.com/watch/1</loc>
  </url><url><loc>https://shop.example.com/plain</loc></url></urlset>""")
    assert (without.updated, without.unchanged) == (1, 1), without.summary()
    assert videos_of(session, [url_of(session, f"{SHOP}watch/1").id]) == {}


def test_the_stylesheet_shows_how_many_videos_each_url_has(app, session):
    site = make_site(session, stylesheet=True)
    page, _ = make_urls(session, site, 2)
    with_videos(session, page, FULL, MINIMAL)
    jobs.regenerate(site.id, app)
    files = published(app, site)
    transform = etree.XSLT(etree.parse(str(files["sitemap.xsl"])))
    html = transform(etree.parse(str(files["sitemap.xml"])))
    cells = html.xpath("//td[@data-label='Videos']/text()")
    assert cells == ["2", "0"]
