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
answers    Answer, Page, OutboundError (by_own_rules: refused here, not there),
           StoppedByOwnRules and the plain words for a failure
reasons    why a request failed, as one of a few plain reasons (webapp.said)
session    the guarded requests session the blocking requests use
blocking   send, fetch, get_page: one blocking request each
token      google-auth's transport for Search Console's access token
crawler    Crawler: verification's kept-alive requests on asyncio, framed by h11
network_time the deadline of a crawler's request, on the network's time
robots     a site's robots.txt: up to five redirects, and what its answer means
html       a fetched page's charset and libxml2's tree of it, in linear time
"""

from __future__ import annotations

from webapp import front_door

# Each name others may use, and the module that defines it. Each is loaded from its module on
# first use (PEP 562): a command that only reads an OutboundError loads neither requests,
# google-auth, h11 nor lxml.
_HOMES = {
    "EXCERPT": "answers", "MAX_BODY": "answers", "RETRYABLE": "answers", "USER_AGENT": "answers",
    "Answer": "answers", "OutboundError": "answers", "Page": "answers", "excerpt": "answers",
    "StoppedByOwnRules": "answers",
    "plain_reason": "answers", "retry_after_seconds": "answers",
    "Crawler": "crawler",
    "Address": "guard", "Network": "guard", "Policy": "guard", "refusal": "guard",
    "html_tree": "html", "page_charset": "html", "page_text": "html",
    "RobotsTxt": "robots", "robots_txt": "robots", "robots_txt_via": "robots",
    "fetch": "blocking", "get_page": "blocking", "send": "blocking",
    "MAX_TOKEN_REPLY": "token", "token_transport": "token",
    "address": "urls", "endpoint_check": "urls", "is_http_url": "urls",
}

__all__ = list(_HOMES)


__getattr__ = front_door(__name__, _HOMES)
