"""Every request this server sends out (announcements, pre-flight checks, imports from a URL,
Search Console's token, verification's crawler): the rules they all follow, and the error
that says whether a retry can help. Use the names below; the modules are this package's own.

- Only addresses the operator allows: a name is resolved and every address it has must be a
  public one (not loopback, private, link-local, multicast or reserved) unless it is in
  OUTBOUND_ALLOW; the connection is made to the address that was checked (guard).
- A total deadline per request, whatever the peer does: a server that drips a byte a second
  has its connection shut when the time is up (guard, crawler).
- Redirects are never followed, a user name or password in a URL is refused, proxies and
  credentials from the environment are ignored, and what is read of an answer is capped.
  robots.txt's redirects are followed hop by hop (robots), each hop a request under these
  rules, as RFC 9309 asks.

guard      where a request may go and for how long (Policy, the address check, the deadline)
urls       which URLs can be sent to, and how one is read
answers    Answer, Page, OutboundError and the plain words for a failure
reasons    why a request failed, as one of a few plain reasons (webapp.said)
session    the guarded requests session the blocking requests use
send       send, fetch, get_page: one blocking request each
token      google-auth's transport for Search Console's access token
crawler    Crawler: verification's kept-alive requests on asyncio, framed by h11
network_time the deadline of a crawler's request, on the network's time
robots     a site's robots.txt: up to five redirects, and what its answer means
html       a fetched page's charset and libxml2's tree of it, in linear time
"""

from webapp.outbound.answers import (
    EXCERPT,
    MAX_BODY,
    RETRYABLE,
    USER_AGENT,
    Answer,
    OutboundError,
    Page,
    excerpt,
    plain_reason,
    retry_after_seconds,
)
from webapp.outbound.crawler import Crawler
from webapp.outbound.guard import Address, Network, Policy, refusal
from webapp.outbound.html import html_tree, page_charset, page_text
from webapp.outbound.robots import RobotsTxt, robots_txt, robots_txt_via
from webapp.outbound.send import fetch, get_page, send
from webapp.outbound.token import MAX_TOKEN_REPLY, token_transport
from webapp.outbound.urls import address, endpoint_check, is_http_url

__all__ = ["EXCERPT", "MAX_BODY", "MAX_TOKEN_REPLY", "RETRYABLE", "USER_AGENT", "Address",
           "Answer", "Crawler", "Network", "OutboundError", "Page", "Policy", "RobotsTxt",
           "address", "endpoint_check", "excerpt", "fetch", "get_page", "html_tree", "is_http_url",
           "page_charset", "page_text",
           "plain_reason", "refusal", "retry_after_seconds", "robots_txt", "robots_txt_via",
           "send", "token_transport"]
