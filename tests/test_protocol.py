"""Tests for webapp.protocol: the sitemaps.org 0.9 rules (PROTOCOL.md §1.2-1.6, §3, §4)."""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone

import pytest

from webapp.protocol import (
    CHANGEFREQS,
    ProtocolError,
    Scope,
    check_encoding,
    check_site_scope,
    check_text,
    directory,
    escape,
    format_priority,
    normalize_base_url,
    normalize_changefreq,
    normalize_hreflang,
    normalize_lastmod,
    normalize_priority,
    normalize_sitemap_url,
    normalize_url,
    normalize_url_noting,
    origin,
)

XSD_LASTMOD = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}\+00:00)?$")
SEED = "http://www.example.com/search?サイトマップ"
SEED_UTF8 = "http://www.example.com/search?%E3%82%B5%E3%82%A4%E3%83%88%E3%83%9E%E3%83%83%E3%83%97"
SEED_EUC_JP = "http://www.example.com/search?%A5%B5%A5%A4%A5%C8%A5%DE%A5%C3%A5%D7"
# Shift_JIS trail bytes 0x54 ('T'), 0x43 ('C')... are ASCII letters, written as letters, as
# browsers do; %83T and %83%54 are the same bytes on the wire (RFC 3986 section 6.2.2.2).
SEED_SJIS = "http://www.example.com/search?%83T%83C%83g%83%7D%83b%83v"
EX = "http://example.com/"


@pytest.mark.parametrize("text, expected", [
    ("a&b", "a&amp;b"), ("a<b", "a&lt;b"), ("a>b", "a&gt;b"), ('a"b', "a&quot;b"),
    ("a'b", "a&apos;b"), ("<&>", "&lt;&amp;&gt;"), ("&lt;", "&amp;lt;"),
    ("http://www.example.com/search?p=example&desc=lower",
     "http://www.example.com/search?p=example&amp;desc=lower"),
    ("http://www.example.com/サイトマップ?q=1", "http://www.example.com/サイトマップ?q=1"),
])
def test_the_five_protocol_characters_are_entity_escaped_once_and_nothing_else(text, expected):
    assert escape(text) == expected


def test_check_text_trims_and_rejects_control_characters_and_overlong_text():
    assert check_text("title", "  Hello  ") == "Hello"
    with pytest.raises(ProtocolError, match="^title .*control character"):
        check_text("title", "a\x0bb")
    with pytest.raises(ProtocolError, match="longer than 3"):
        check_text("title", "abcd", max_length=3)


@pytest.mark.parametrize("raw, encoding, expected", [
    (SEED, "utf-8", SEED_UTF8), (SEED, "EUC-JP", SEED_EUC_JP), (SEED, "shift_jis", SEED_SJIS),
    ("http://www.example.com/ソ表", "shift_jis", "http://www.example.com/%83%5C%95%5C"),
    (EX + "über?ü", "utf-8", EX + "%C3%BCber?%C3%BC"),
], ids=["utf-8", "euc-jp", "shift_jis", "shift_jis-backslash-trail-byte", "utf-8-path"])
def test_non_ascii_text_is_percent_encoded_in_the_site_encoding(raw, encoding, expected):
    assert normalize_url(raw, encoding) == expected


@pytest.mark.parametrize("url", [SEED_UTF8, SEED_EUC_JP, SEED_SJIS, EX + "a%20b?x=1&y=%2F",
                                 "https://[::1]:8443/x"])
def test_normalizing_an_already_normalized_url_returns_it_unchanged(url):
    assert normalize_url(url) == url


@pytest.mark.parametrize("tail, expected", [
    ("%e3%82%b5", "%E3%82%B5"), ("?q=%c3%bc", "?q=%C3%BC"), ("100%", "100%25"),
    ("a%2", "a%252"), ("?q=%zz", "?q=%25zz"), ("%%41", "%25A"), ("%7euser%2D1", "~user-1"),
])
def test_escapes_are_upper_cased_and_a_lone_percent_becomes_percent_25(tail, expected):
    assert normalize_url(EX + tail) == EX + expected


@pytest.mark.parametrize("raw, expected", [
    (EX + 'a b"<>?q=a b"<>', EX + "a%20b%22%3C%3E?q=a%20b%22%3C%3E"),
    (EX + "a\\b[c]{d}|e^f`g", EX + "a%5Cb%5Bc%5D%7Bd%7D%7Ce%5Ef%60g"),
    (EX + "a-b_c.d~e!$&'()*+,;=:@/f?g=h/i?j", EX + "a-b_c.d~e!$&'()*+,;=:@/f?g=h/i?j"),
], ids=["space-quote-angle", "other-unsafe", "rfc3986-allowed"])
def test_only_characters_rfc3986_forbids_are_percent_encoded(raw, expected):
    assert normalize_url(raw) == expected


@pytest.mark.parametrize("raw, expected", [
    ("http://bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://例え.jp/", "http://xn--r8jz45g.jp/"),
    ("HTTP://WWW.Example.COM/Path", "http://www.example.com/Path"), ("http://example.com", EX),
    ("http://example.com:80/", EX), ("https://example.com:443/x", "https://example.com/x"),
    ("https://example.com:8443/x", "https://example.com:8443/x"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/x"),
    ("http://[::1]/", "http://[::1]/"), ("  http://example.com/x \n", EX + "x"),
], ids=["idn", "idn-japanese", "case", "empty-path", "http-80", "https-443", "other-port",
        "http-443-kept", "ipv6-port", "ipv6", "surrounding-space"])
def test_host_scheme_and_port_are_normalized(raw, expected):
    assert normalize_url(raw) == expected


@pytest.mark.parametrize("raw, rule", [
    ("", "is required"), ("/relative/page.html", "absolute URL"),
    ("www.example.com/page", "absolute URL"), ("ftp://example.com/file", "absolute URL"),
    ("mailto:someone@example.com", "absolute URL"), ("http:///path", "absolute URL"),
    ("http://user:pass@example.com/", "user name or password"),
    ("http://user@example.com/", "user name or password"),
    ("http://exa\tmple.com/", "control character"), (EX + "a\nb", "control character"),
    (EX + "a\x7fb", "control character"), ("http://example.com:99999/", "not a valid URL"),
    ("http://exa_mple.com/", "characters a domain cannot have"), ("http://a.c", "shorter than 12"),
    (EX + "😀", "euc-jp cannot encode"),
], ids=["empty", "relative", "no-scheme", "ftp", "mailto", "no-host", "user-pass", "user",
        "tab", "newline", "del", "bad-port", "underscore-host", "too-short", "unencodable"])
def test_invalid_urls_are_rejected_naming_the_loc_field(raw, rule):
    with pytest.raises(ProtocolError, match=rf"^loc .*{re.escape(rule)}") as info:
        normalize_url(raw, "euc-jp")
    assert info.value.field == "loc" and rule in info.value.rule


@pytest.mark.parametrize("raw, expected, fragment", [
    (EX + "page#a", EX + "page", "#a"), (EX + "page#", EX + "page", "#"),
    (EX + "a b?q=1#x y", EX + "a%20b?q=1", "#x y"), (EX + "p?q=#1#2", EX + "p?q=", "#1#2"),
])
def test_a_fragment_is_removed_with_a_note_naming_it(raw, expected, fragment):
    url, note = normalize_url_noting(raw)
    assert url == expected == normalize_url(raw)
    assert note.field == "loc" and note.value == raw
    assert f"the fragment {fragment} was removed" in str(note)
    assert normalize_url_noting(expected) == (expected, None)


@pytest.mark.parametrize("raw, expected", [
    ("http://faß.example/", "http://xn--fa-hia.example/"),  # IDNA 2003: fass.example
    ("http://FASS.example/", "http://fass.example/"),  # a different host from faß
    ("http://βόλος.example/", "http://xn--nxasmm1c.example/"),  # 2003: ς became σ
    ("http://\u0915\u094d\u200c\u0937.example/", "http://xn--11b2ezcs70k.example/"),  # ZWNJ
    ("http://Bücher.example/", "http://xn--bcher-kva.example/"),  # mapped to lower case
    ("http://ｅｘａｍｐｌｅ.com/", "http://example.com/"),  # full-width letters mapped
], ids=["sharp-s", "ss", "final-sigma", "zwnj-after-virama", "upper-case", "full-width"])
def test_international_host_names_follow_uts46_and_idna_2008_as_browsers_do(raw, expected):
    assert normalize_url(raw) == expected


@pytest.mark.parametrize("host, rule", [
    ("a\u200db.example", "zero-width joiner or non-joiner"),  # 2003 deleted it: ab.example
    ("ab\u200c.example", "zero-width joiner or non-joiner"),
    ("\u2603.example", "character that IDNA 2008 does not allow"),  # 2003: xn--n3h.example
    ("\u0300a.example", "not a valid international domain name under IDNA 2008"),
], ids=["zwj-between-latin", "zwnj-at-end", "symbol", "leading-combining-mark"])
def test_host_names_idna_2008_refuses_are_rejected_naming_the_field_and_the_rule(host, rule):
    with pytest.raises(ProtocolError, match=rf"^loc .*{re.escape(rule)}"):
        normalize_url(f"http://{host}/page")


def test_a_host_character_idna_2008_refuses_is_named_in_words_a_translation_can_carry():
    """Not the idna library's English ("Codepoint U+2603 at position 1 of ... not allowed"),
    which a Japanese page would show as it is."""
    with pytest.raises(ProtocolError) as refused:
        normalize_url("http://\u2603.example/page")
    assert str(refused.value).endswith(
        "does not allow in a domain name: \u2603 (U+2603)"), str(refused.value)


def test_lengths_of_12_and_2048_characters_are_accepted_and_2049_is_rejected():
    assert normalize_url("http://a.co/") == "http://a.co/"
    url = EX + "a" * (2048 - len(EX))
    assert normalize_url(url) == url
    with pytest.raises(ProtocolError, match="2049 characters once encoded; the limit is 2048"):
        normalize_url(url + "a")
    with pytest.raises(ProtocolError, match="2419 characters once encoded"):
        normalize_url(EX + "ü" * 400)


def test_protocol_error_carries_field_value_and_rule_and_shortens_long_values():
    with pytest.raises(ProtocolError) as info:
        normalize_url("ftp://example.com/x", field="image_loc")
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.field, err.value) == ("image_loc", "ftp://example.com/x") and "http://" in err.rule
    assert str(err).startswith("image_loc 'ftp://example.com/x': ")
    long = ProtocolError("loc", "x" * 200, "rule")
    assert str(long) == f"loc '{'x' * 77}...': rule" and long.value == "x" * 200


def test_protocol_error_message_does_not_mark_short_non_string_values_as_cut():
    with pytest.raises(ProtocolError) as info:
        normalize_priority(1.5)
    assert "..." not in str(info.value)


def test_origin_and_directory_of_a_normalized_url():
    assert origin("https://example.com:8443/a/b.xml?x") == "https://example.com:8443"
    assert directory("http://example.com/catalog/sitemap.xml") == "http://example.com/catalog/"
    assert directory(EX + "sitemap.xml") == EX


@pytest.mark.parametrize("raw, expected", [
    ("http://example.com", EX), ("https://Example.com/blog", "https://example.com/blog/"),
    ("https://example.com/blog/", "https://example.com/blog/"), (EX + "?page=1", None),
    (EX + "#top", None)])
def test_base_url_gets_a_trailing_slash_and_no_query_or_fragment(raw, expected):
    if expected:
        assert normalize_base_url(raw) == expected
    else:
        with pytest.raises(ProtocolError, match="^base_url .*query"):
            normalize_base_url(raw)


@pytest.mark.parametrize("path, ok", [
    ("sitemap.xml", True), ("m/map_2-a.xml", True), ("", False), ("sitemap", False),
    ("sitemap.xml.gz", False), (".xml", False), ("sitemap.xml?v=2", False)])
def test_sitemap_url_needs_an_xml_file_name(path, ok):
    if ok:
        assert normalize_sitemap_url(EX + path) == EX + path
    else:
        with pytest.raises(ProtocolError, match="^sitemap_url "):
            normalize_sitemap_url(EX + path)


@pytest.mark.parametrize("base, sitemap", [
    (EX, EX + "sitemap.xml"), (EX + "catalog/", EX + "sitemap.xml"),
    (EX + "catalog/", EX + "catalog/sitemap.xml")])
def test_sitemap_at_or_above_the_base_on_the_same_host_is_in_scope(base, sitemap):
    assert check_site_scope(base, sitemap) is None


def test_sitemap_in_a_subdirectory_below_the_base_cannot_cover_the_site():
    with pytest.raises(ProtocolError, match="^sitemap_url .*under http://example.com/sub/"):
        check_site_scope(EX, EX + "sub/sitemap.xml")


def test_cross_host_sitemap_returns_a_robots_txt_warning():
    warning = str(check_site_scope("http://www.host1.com/", "http://www.sitemaphost.com/s-host1.xml"))
    assert "http://www.host1.com/robots.txt" in warning
    assert "'Sitemap: http://www.sitemaphost.com/s-host1.xml'" in warning


@pytest.mark.parametrize("loc, inside", [
    (EX + "catalog/show?item=23", True), (EX + "catalog/show?item=233&user=3453", True),
    (EX + "catalog/", True), (EX + "image/show?item=23", False),
    (EX + "image/show?item=233&user=3453", False), ("https://example.com/catalog/p.html", False),
    ("http://www.example.com/catalog/", False), ("http://example.com:8080/catalog/", False),
    ("http://example.com.evil.test/catalog/", False), (EX + "catalogue/", False),
    (EX + "catalog", False)])
def test_only_urls_with_the_same_scheme_host_port_and_path_prefix_are_in_scope(loc, inside):
    if inside:
        assert Scope(EX + "catalog/").normalize(loc) == loc
    else:
        with pytest.raises(ProtocolError, match="^loc .*outside the site"):
            Scope(EX + "catalog/").normalize(loc)


def test_scope_requires_its_port_and_normalizes_in_its_encoding():
    scope = Scope("http://www.example.com:100/")
    assert scope.normalize("http://WWW.example.com:100/a b") == "http://www.example.com:100/a%20b"
    with pytest.raises(ProtocolError, match="outside the site"):
        scope.normalize("http://www.example.com/a")
    scope = Scope("http://www.example.com/", "euc-jp")
    assert scope.normalize("http://www.example.com:80/search?サイトマップ") == SEED_EUC_JP


def test_dot_segments_cannot_escape_the_scope():
    with pytest.raises(ProtocolError):
        Scope(EX + "catalog/").normalize(EX + "catalog/../images/x")


@pytest.mark.parametrize("path, expected", [
    ("/catalog/./a/../b", "/catalog/b"), ("/a/b/..", "/a/"), ("/a/.", "/a/"), ("/../a", "/a"),
    ("/a.b/c..d/.e", "/a.b/c..d/.e"),
])
def test_dot_segments_are_resolved_like_a_browser_does(path, expected):
    assert normalize_url(EX.rstrip("/") + path) == EX.rstrip("/") + expected


@pytest.mark.parametrize("raw, expected", [
    ("2024", "2024-01-01"), ("2024-05", "2024-05-01"), ("2024-05-06", "2024-05-06"),
    ("  2024-05-06  ", "2024-05-06"), ("2024-02-29", "2024-02-29"),
    ("2024-05-06T10:30+02:00", "2024-05-06T08:30:00+00:00"),
    ("2024-05-06T10:30:15-05:00", "2024-05-06T15:30:15+00:00"),
    ("2024-05-06T10:30:15.123456+01:00", "2024-05-06T09:30:15+00:00"),
    ("2024-05-06T10:30:15Z", "2024-05-06T10:30:15+00:00"),
    ("2024-05-06t10:30z", "2024-05-06T10:30:00+00:00"),
    ("2024-05-06T10:30:15", "2024-05-06T10:30:15+00:00"),  # no zone: taken as UTC
    ("2024-05-06 10:30", "2024-05-06T10:30:00+00:00"),
    ("2024-05-06T10:30+0530", "2024-05-06T05:00:00+00:00"),
    ("2024-01-01T01:00+02:00", "2023-12-31T23:00:00+00:00"),
    ("2024-12-31T23:30-14:00", "2025-01-01T13:30:00+00:00"),
    (date(2024, 5, 6), "2024-05-06"),
    (datetime(2024, 5, 6, 10, 30, 15, 999), "2024-05-06T10:30:15+00:00"),
    (datetime(2024, 5, 6, 10, 30, tzinfo=timezone(timedelta(hours=9))),
     "2024-05-06T01:30:00+00:00")])
def test_every_w3c_datetime_form_becomes_an_xsd_date_or_utc_datetime(raw, expected):
    result = normalize_lastmod(raw)
    assert result == expected and XSD_LASTMOD.match(result)


@pytest.mark.parametrize("normalize", [normalize_lastmod, normalize_changefreq, normalize_priority])
@pytest.mark.parametrize("raw", [None, "", "   "])
def test_missing_optional_values_are_none(normalize, raw):
    assert normalize(raw) is None


@pytest.mark.parametrize("raw", [
    "02/01/2024", "2024-1-2", "24-01-02", "yesterday", "2024-05-06T10", "2024-05-06Z", "2024-13-01",
    "2024-00-10", "2023-02-29", "2024-02-30", "2024-05-06T25:00Z", "2024-05-06T10:60Z",
    "2024-05-06T10:30+15:00", "2024-05-06T10:30+01:60"])
def test_invalid_lastmod_is_rejected(raw):
    with pytest.raises(ProtocolError, match="^lastmod ") as info:
        normalize_lastmod(raw)
    assert info.value.value == raw


@pytest.mark.parametrize("raw", ["9999-12-31T23:00-02:00", "0001-01-01T00:30+01:00"])
def test_lastmod_whose_utc_time_is_out_of_range_is_a_protocol_error(raw):
    with pytest.raises(ProtocolError):
        normalize_lastmod(raw)


@pytest.mark.parametrize("raw", ["0999-01-01T00:00:00Z", datetime(999, 1, 1)])
def test_lastmod_with_a_three_digit_year_still_has_a_four_digit_year(raw):
    assert XSD_LASTMOD.match(normalize_lastmod(raw))


@pytest.mark.parametrize("value", CHANGEFREQS)
def test_each_of_the_seven_changefreq_values_is_accepted_case_folded(value):
    assert normalize_changefreq(value) == value
    assert normalize_changefreq(f" {value.upper()} ") == value


@pytest.mark.parametrize("raw", ["sometimes", "day", "fortnightly"])
def test_unknown_changefreq_is_rejected_listing_the_values(raw):
    with pytest.raises(ProtocolError, match="^changefreq ") as info:
        normalize_changefreq(raw)
    assert len(CHANGEFREQS) == 7 and all(value in info.value.rule for value in CHANGEFREQS)


@pytest.mark.parametrize("raw, expected", [
    ("0", 0.0), ("1", 1.0), ("1.0", 1.0), (".5", 0.5), ("0.8", 0.8), (" 0.125 ", 0.125),
    ("1.", 1.0), (0, 0.0), (1, 1.0), (0.5, 0.5), (0.333, 0.333)])
def test_priority_from_string_or_number_is_accepted(raw, expected):
    assert normalize_priority(raw) == expected


@pytest.mark.parametrize("raw, rule", [
    *[(raw, "0.0 to 1.0") for raw in ("1.5", "-0.1", "nan", "abc", ".", "1e-1", "0,5", "1.0001",
                                      1.5, -0.1, math.nan, math.inf)],
    *[(raw, "three decimal places") for raw in ("0.1234", "0.0001", 0.1234)]])
def test_priority_outside_0_to_1_or_with_too_many_decimals_is_rejected(raw, rule):
    with pytest.raises(ProtocolError, match=f"^priority .*{rule}"):
        normalize_priority(raw)


@pytest.mark.parametrize("value, text", [
    (0.8, "0.8"), (1, "1.0"), (1.0, "1.0"), (0, "0.0"), (0.5, "0.5"), (0.65, "0.65"),
    (0.125, "0.125"), (0.05, "0.05"), (0.001, "0.001")])
def test_priority_is_formatted_with_one_decimal_or_as_few_as_needed(value, text):
    assert format_priority(value) == text


def test_every_three_decimal_priority_round_trips_through_its_formatted_text():
    for k in range(1001):
        value = normalize_priority(f"{k / 1000}")
        assert normalize_priority(format_priority(value)) == value


@pytest.mark.parametrize("raw, expected", [
    ("en", "en"), ("DE", "de"), ("de-ch", "de-CH"), ("zh-hant", "zh-Hant"), ("es-419", None),
    ("zh-HANT-tw", "zh-Hant-TW"), ("X-Default", "x-default"), ("fil", "fil"), (" ja-jp ", "ja-JP"),
    ("en-uk", None),
    ("english", None), ("en_US", None), ("e", None), ("en-", None), ("en-usa1", None),
    ("", None), (None, None)])
def test_hreflang_is_a_language_code_normalized_to_bcp47_case(raw, expected):
    if expected:
        assert normalize_hreflang(raw) == expected
    else:
        with pytest.raises(ProtocolError, match="^hreflang "):
            normalize_hreflang(raw)


@pytest.mark.parametrize("raw", ["ſv", "en-uſ", "es-٤١٩"])
def test_hreflang_with_non_ascii_letters_or_digits_is_rejected(raw):
    with pytest.raises(ProtocolError):
        normalize_hreflang(raw)


@pytest.mark.parametrize("raw, expected", [
    ("utf8", "utf-8"), ("UTF-8", "utf-8"), ("EUC-JP", "euc_jp"), (" Shift_JIS ", "shift_jis"),
    ("sjis", "shift_jis"), ("latin-1", "iso8859-1"), ("bogus-enc", None)])
def test_known_encodings_get_their_canonical_name_and_unknown_ones_are_rejected(raw, expected):
    if expected:
        assert check_encoding(raw) == expected
    else:
        with pytest.raises(ProtocolError, match="^encoding 'bogus-enc': .*utf-8"):
            check_encoding(raw)


@pytest.mark.parametrize("name", ["base64", "rot13", "hex", "zlib"])
def test_a_codec_that_is_not_a_character_encoding_is_rejected(name):
    with pytest.raises(ProtocolError):
        check_encoding(name)


def test_normalize_url_is_ascii_and_idempotent_for_arbitrary_path_text():
    hypothesis = pytest.importorskip("hypothesis")

    st = hypothesis.strategies

    @hypothesis.settings(max_examples=600, database=None, deadline=None)
    @hypothesis.given(st.text(max_size=60), st.sampled_from(["utf-8", "euc-jp", "shift_jis",
                                                             "iso-8859-1", "gb18030"]))
    def check(segment, encoding):
        try:
            url = normalize_url("https://example.com/" + segment, encoding)
        except ProtocolError:
            return
        assert url.isascii() and url.startswith("https://example.com/")
        assert normalize_url(url, encoding) == url

    check()


def test_lastmod_of_any_aware_time_is_xsd_valid_and_keeps_the_instant():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=300, database=None, deadline=None)
    @hypothesis.given(st.datetimes(datetime(1000, 1, 2), datetime(9999, 12, 30)),
                      st.integers(-14 * 60, 14 * 60))
    def check(naive, offset_minutes):
        moment = naive.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
        result = normalize_lastmod(moment.isoformat())
        assert XSD_LASTMOD.match(result)
        assert datetime.fromisoformat(result) == moment.replace(microsecond=0)
        assert normalize_lastmod(result) == result

    check()
