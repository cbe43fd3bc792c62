"""What a request gives back: an Answer (a success), a Page (whatever a crawled address
answered), or an OutboundError that says whether a retry can help, in plain words."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from webapp.outbound import reasons
from webapp.outbound.urls import address
from webapp.said import Line, english

USER_AGENT = "sitemap-dashboard/0.1 (self-hosted; announces sitemap changes)"
MAX_BODY = 1 << 20  # read at most this much of an answer: enough for robots.txt or an error
EXCERPT = 300
# Answers that say "not now": the same request may well succeed later.
RETRYABLE = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Answer:
    status: int
    meaning: str
    body: str
    content_type: str = ""  # the Content-Type header, as sent
    said: dict | None = None  # the meaning in the reader's language (webapp.said), if known

    @property
    def excerpt(self) -> str:
        return excerpt(self.body)


@dataclass(frozen=True)
class Page:
    """A page as a crawler sees it, whatever its status (redirects are answers too): the
    headers (names looked up in lower case) and at most the first bytes of the body
    (`truncated` when there was more)."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    truncated: bool = False

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


class OutboundError(Exception):
    """A request that did not succeed; `permanent` when sending it again cannot help.

    `meaning` is English (the ledger's outcome, the CLI, the API); `said` the same reason in
    plain words for a reader's language (webapp.said), when there is one; `detail` the
    technical error for operators. `by_own_rules` names the setting of this server that
    stopped it (OUTBOUND_ALLOW, a credential), when nothing was sent because of it: what the
    other end would answer is unknown, so a run stops rather than record it as the answer."""

    def __init__(self, meaning: str, *, status: int | None = None, body: str = "",
                 permanent: bool = False, retry_after: float | None = None,
                 said: Line | None = None, detail: str = "", by_own_rules: str | None = None):
        super().__init__(meaning)
        self.meaning, self.said, self.detail = meaning, said, detail
        self.status = status
        self.excerpt = excerpt(body)
        self.permanent = permanent
        self.retry_after = retry_after
        self.by_own_rules = by_own_rules

    def said_line(self) -> Line:
        """Why, in plain words for the reader's language (a task's closing message)."""
        return plain_reason(self)


class StoppedByOwnRules(Exception):
    """A run (a verification, a discovery crawl) that this server's own rules stopped: `line`
    says what stopped, what was kept and why (webapp.said), naming `setting`; `str()` is its
    English (the CLI, the run's record)."""

    def __init__(self, line: Line, setting: str):
        super().__init__(setting)
        self.line, self.setting = line, setting

    def __str__(self) -> str:
        return english([self.line])

    def said_line(self) -> Line:
        return self.line


def plain_reason(error: OutboundError) -> Line:
    """Why a request failed, in plain words for the reader's language (webapp.said); the
    English meaning, as it is, for an error that has none."""
    if error.said is not None:
        return error.said
    return {"text": error.meaning.removesuffix("; will try again")}


def excerpt(body: str) -> str:
    text = " ".join(body.split())
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: either a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # isdigit alone takes superscripts float() refuses
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def not_a_url(url: str) -> OutboundError:
    return OutboundError(f"{url!r} is not an http:// or https:// URL without a user name or "
                         "password", permanent=True, said=reasons.not_a_url(url))


def failure(exc: Exception, url: str, seconds: float, timed_out: bool) -> OutboundError:
    """What went wrong with no answer to show, in words a site owner can act on: one of a few
    plain reasons (webapp.outbound.reasons), the technical error kept as `detail`; always
    worth a retry."""
    if timed_out:
        return OutboundError(f"no answer within {seconds:g} s; will try again",
                             said=reasons.no_answer(seconds))
    plain = reasons.connect_failure(reasons.kind_of(exc), address(url))
    return OutboundError(f"{english([plain])}; will try again", said=plain,
                         detail=reasons.technical(exc))
