"""The service account Search Console submissions act as, and the test of its connection.

An admin uploads the account's JSON key file in the dashboard: it is checked, sealed
(webapp.accounts.sealing) and never shown again. An operator may instead name a key file on the server
(the `gsc_credentials` setting); an uploaded key wins over the file. "Test connection" makes a
real token exchange at the key's token address and lists the properties the account sees.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from flask_babel import gettext as _
from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp.accounts import sealing
from webapp.errors import InvalidValue, rule_text
from webapp.models import ServiceAccountKey, Site
from webapp.outbound import OutboundError, Policy, is_http_url, send
from webapp.said import Line, said

if TYPE_CHECKING:
    import google.auth.exceptions
    from google.oauth2 import service_account

# google-auth (and the cryptography it signs with) is imported where a key is read or used,
# not above: every page and command that only names an engine's settings would load it.

SCOPES = ["https://www.googleapis.com/auth/webmasters"]
GOOGLE_HOSTS = frozenset({"www.googleapis.com", "searchconsole.googleapis.com"})
REQUIRED_FIELDS = ("client_email", "private_key", "token_uri")
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
MAX_KEY_FILE = 64 * 1024  # a real one is about 2.3 KB

_cache: dict[tuple, service_account.Credentials] = {}
_lock = threading.Lock()


def token_hosts(config: Mapping) -> set[str]:
    """Where the access token may be sent: Google's documented API hosts, and the host of
    GSC_ENDPOINT when the operator set another one."""
    return GOOGLE_HOSTS | {urlsplit(config["GSC_ENDPOINT"]).netloc.lower()}


def token_may_go_to(url: str, config: Mapping) -> bool:
    """Whether the access token may be sent to `url`: a token host (token_hosts) over https,
    or GSC_ENDPOINT's own scheme and host (an operator's endpoint, http only if set so)."""
    given, endpoint = urlsplit(url), urlsplit(config["GSC_ENDPOINT"])
    host = given.netloc.lower()
    if host not in token_hosts(config):
        return False
    return given.scheme.lower() == "https" or (given.scheme.lower(), host) == (
        endpoint.scheme.lower(), endpoint.netloc.lower())


def token_uri_allowed(uri: str, config: Mapping) -> bool:
    """Where an uploaded key may send its signed grant: Google's token address, or one on
    GSC_ENDPOINT's scheme, host and port (an operator's own endpoint, as the tests' fake one).
    A key file is anyone's text: its token_uri must not make the server POST anywhere."""
    if uri == GOOGLE_TOKEN_URI:
        return True
    endpoint, given = urlsplit(config["GSC_ENDPOINT"]), urlsplit(uri)
    return (given.scheme.lower(), given.netloc.lower()) == (endpoint.scheme.lower(),
                                                            endpoint.netloc.lower())


def api_base(site: Site, config: Mapping) -> str:
    """The Search Console API the site's requests go to, without a trailing slash."""
    return (site.gsc_endpoint or config["GSC_ENDPOINT"]).rstrip("/")


class AccountProblem(Exception):
    """What is wrong with a key file or a connection, in words for the person who set it up.
    `setting` names this server's setting that keeps the key from being used (the key file
    it cannot read, gsc_credentials; CREDENTIALS_KEY that does not open the uploaded key),
    when it is one; `said` the reason for a reader's language (webapp.said), when known."""

    def __init__(self, message: str, setting: str | None = None, said: Line | None = None):
        super().__init__(message)
        self.setting, self.said = setting, said


def load_credentials(path: str) -> service_account.Credentials:
    """The service account in a key file on the server, or a clear reason why it is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            info = json.load(handle)
        return _credentials_from(info)
    except OSError as exc:
        raise InvalidValue("gsc_credentials", path, rule_text(
            "cannot be read (%(reason)s)", reason=exc.strerror)) from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidValue("gsc_credentials", path, rule_text(
            "must be the JSON key file of a Google service account (%(reason)s)",
            reason=str(exc).splitlines()[0][:120])) from None
    except RecursionError:  # arrays or objects nested deeper than the parser goes
        raise InvalidValue("gsc_credentials", path, rule_text(
            "is not a key file: its JSON nests arrays or objects too deeply")) from None


def check_credentials(value: str) -> str | None:
    """The path of a service-account key file, checked by loading it; empty turns it off."""
    value = value.strip()
    if not value:
        return None
    path = os.path.abspath(value)
    load_credentials(path)
    return path


def read_key_file(data: bytes, config: Mapping) -> dict:
    """The service account of an uploaded JSON key file; AccountProblem names what is wrong."""
    if len(data) > MAX_KEY_FILE:
        raise AccountProblem(_("The file is %(size)s bytes: a service-account key file is a few "
                               "kilobytes. Choose the JSON key file.", size=len(data)))
    try:
        info = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise AccountProblem(_("The file is not text: choose the JSON key file Google Cloud "
                               "downloaded for the service account.")) from None
    except json.JSONDecodeError as exc:
        raise AccountProblem(_("The file is not JSON (line %(line)s, column %(column)s: "
                               "%(reason)s).", line=exc.lineno, column=exc.colno,
                               reason=exc.msg)) from None
    except RecursionError:  # arrays or objects nested deeper than the parser goes
        raise AccountProblem(_("The file is not a key file: it nests arrays or objects too "
                               "deeply to be read.")) from None
    if not isinstance(info, dict):
        raise AccountProblem(_("The file is JSON but not a key file: it holds no object."))
    if info.get("type") != "service_account":
        raise AccountProblem(_('The file is not a service-account key: its "type" is '
                               '%(type)s, not "service_account". Create a key for a service '
                               "account in Google Cloud (IAM, Service accounts, Keys).",
                               type=json.dumps(info.get("type"))))
    missing = [name for name in REQUIRED_FIELDS
               if not isinstance(info.get(name), str) or not info[name].strip()]
    if missing:
        raise AccountProblem(_("The key file lacks %(fields)s: download a new key for the "
                               "service account.", fields=", ".join(missing)))
    if len(info["client_email"]) > 320 or "@" not in info["client_email"]:
        raise AccountProblem(_("The key file's client_email is not an e-mail address."))
    if not is_http_url(info["token_uri"]):
        raise AccountProblem(_("The key file's token_uri %(uri)s is not an http:// or "
                               "https:// address.", uri=info["token_uri"][:200]))
    if not token_uri_allowed(info["token_uri"], config):
        raise AccountProblem(_("The key file's token_uri %(uri)s is not Google's token "
                               "address %(google)s: download the key again from Google Cloud.",
                               uri=info["token_uri"][:200], google=GOOGLE_TOKEN_URI))
    try:
        _credentials_from(info)
    except (ValueError, TypeError, KeyError, AttributeError):
        raise AccountProblem(_("The key file's private_key is not a private key this app can "
                               "read: download a new key for the service account.")) from None
    return info


def store(session: Session, site: Site, info: dict, config: Mapping, now: datetime) -> None:
    """Seal the key file's content for the site, replacing any key uploaded before."""
    sealed = sealing.seal(config, json.dumps(info).encode())
    if site.service_account is None:
        site.service_account = ServiceAccountKey(site_id=site.id)
    site.service_account.client_email = info["client_email"]
    site.service_account.sealed = sealed
    site.service_account.uploaded_at = now


def remove(session: Session, site: Site) -> None:
    if site.service_account is not None:
        session.delete(site.service_account)
        site.service_account = None


def configured(site: Site) -> bool:
    """Whether the site has a service account: uploaded, or a key file on the server."""
    return bool(site.gsc_credentials) or site.service_account is not None


def credentials(site: Site, config: Mapping) -> service_account.Credentials:
    """The site's service account, the uploaded key winning over the file; one object per key
    version, so its access token is reused until it expires. AccountProblem when unusable."""
    uploaded = site.service_account
    if uploaded is not None:
        key = ("upload", site.id, uploaded.uploaded_at)
    elif site.gsc_credentials:
        try:
            key = ("file", site.gsc_credentials, os.stat(site.gsc_credentials).st_mtime)
        except OSError as exc:
            raise _unreadable(site.gsc_credentials, exc.strerror) from None
    else:
        raise AccountProblem(_("No service account: upload its JSON key file."))
    with _lock:
        if key not in _cache:
            _cache[key] = _load(site, config)
        return _cache[key]


def _unreadable(path: str, reason: str) -> AccountProblem:
    """The key file on the server that this process cannot read (missing, or not its user's)."""
    return AccountProblem(f"gsc_credentials: {path} cannot be read ({reason})",
                          "gsc_credentials", said("the key file %(path)s (gsc_credentials) "
                                                  "cannot be read by this server", path=path))


def _load(site: Site, config: Mapping) -> service_account.Credentials:
    if site.service_account is None:
        try:
            return load_credentials(site.gsc_credentials)
        except InvalidValue as exc:
            if not os.access(site.gsc_credentials, os.R_OK):
                raise _unreadable(site.gsc_credentials, "not readable by this user") from None
            raise AccountProblem(str(exc)) from None
    try:
        info = json.loads(sealing.unseal(config, site.service_account.sealed))
    except sealing.CannotOpen as exc:
        raise AccountProblem(_("The uploaded key cannot be read: %(reason)s.",
                               reason=str(exc)), "CREDENTIALS_KEY", said(
            "the uploaded Search Console key cannot be opened with CREDENTIALS_KEY or any of "
            "CREDENTIALS_OLD_KEYS: set the key it was stored with, or upload the key "
            "again")) from None
    if not token_uri_allowed(str(info.get("token_uri")), config):  # uploaded before the check
        raise AccountProblem(_("The key file's token_uri %(uri)s is not Google's token "
                               "address %(google)s: download the key again from Google Cloud.",
                               uri=str(info.get("token_uri"))[:200], google=GOOGLE_TOKEN_URI))
    return _credentials_from(info)


def _credentials_from(info: Mapping) -> service_account.Credentials:
    """The service account of a key file's content (google-auth, loaded by the first key)."""
    from google.oauth2 import service_account

    return service_account.Credentials.from_service_account_info(info, scopes=SCOPES)


def refresh(account: service_account.Credentials, config: Mapping) -> None:
    """Get an access token from the key's token address (a signed grant; through outbound).
    OutboundError says why not, permanent unless trying again may help."""
    import google.auth.exceptions

    from webapp.outbound import token_transport

    transport = token_transport(Policy.of(config))
    try:
        with _lock, transport.session:
            account.refresh(transport)
    except google.auth.exceptions.RefreshError as exc:
        raise OutboundError(_refusal(exc), permanent=not getattr(exc, "retryable", False)
                            ) from None
    except google.auth.exceptions.TransportError as exc:
        if isinstance(exc.__cause__, OutboundError) and exc.__cause__.by_own_rules:
            raise exc.__cause__ from None  # refused here: the token address heard nothing
        raise OutboundError(_("could not get an access token: %(reason)s; will try again",
                              reason=str(exc).removesuffix("; will try again"))) from None
    except (ValueError, RecursionError):  # not JSON, or JSON nested past Python's depth
        raise OutboundError(_refusal(google.auth.exceptions.RefreshError()),
                            permanent=True) from None


def _refusal(exc: google.auth.exceptions.RefreshError) -> str:
    """What the token address said, as OAuth says it (`error`, `error_description`) and no
    more: its answer is not echoed."""
    data = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], dict) else {}
    said = ": ".join(str(data[name])[:200] for name in ("error", "error_description")
                     if data.get(name))
    if not said:
        return _("the token address refused the service account without an OAuth error")
    if data.get("error") in ("invalid_grant", "invalid_client"):
        return _("the token address refused the key (%(reason)s): the key was deleted or "
                 "replaced in Google Cloud, or belongs to another account; upload a current "
                 "key", reason=said)
    return _("the token address refused the service account: %(reason)s", reason=said)


@dataclass(frozen=True)
class Property:
    url: str  # as Search Console names it: sc-domain:example.com or https://example.com/
    permission: str  # siteOwner, siteFullUser, siteRestrictedUser, siteUnverifiedUser


def test_connection(site: Site, config: Mapping) -> tuple[str, list[Property]]:
    """A real token exchange, then Search Console's sites.list on the site's API address (only
    where tokens may go): the account's e-mail and the properties it sees. AccountProblem
    says, in plain words, what failed."""
    account = credentials(site, config)
    url = f"{api_base(site, config)}/webmasters/v3/sites"
    allowed = token_hosts(config)
    if not token_may_go_to(url, config):
        raise AccountProblem(_("%(url)s is not a Search Console address: the access token is "
                               "sent only over https:// to %(hosts)s (or to GSC_ENDPOINT).",
                               url=api_base(site, config), hosts=", ".join(sorted(allowed))))
    try:
        refresh(account, config)
    except OutboundError as exc:
        raise AccountProblem(_("The token exchange failed: %(reason)s.",
                               reason=_plain(exc))) from None
    try:
        answer = send("GET", url, Policy.of(config),
                      headers={"Authorization": f"Bearer {account.token}"})
        entries = json.loads(answer.body).get("siteEntry", [])
    except OutboundError as exc:
        raise AccountProblem(_("The token exchange worked, but Search Console's list of "
                               "properties failed: %(reason)s.", reason=_plain(exc))) from None
    except (ValueError, AttributeError, RecursionError):  # RecursionError: nested too deep
        raise AccountProblem(_("The token exchange worked, but %(url)s did not answer with "
                               "Search Console's list of properties.", url=url)) from None
    return account.service_account_email, sorted(
        (Property(str(entry.get("siteUrl", "")), str(entry.get("permissionLevel", "")))
         for entry in entries if isinstance(entry, dict)), key=lambda p: p.url)


def _plain(error: OutboundError) -> str:
    """The reason, without the ledger's "will try again": a person pressed a button."""
    return error.meaning.removesuffix("; will try again").removesuffix("; will try again later")


def reseal_all(session: Session, config: Mapping) -> tuple[int, list[tuple[str, str]]]:
    """Seal every uploaded key again under the current key (after a rotation): how many were,
    and (site slug, reason) of each that no configured key opens (left as it is)."""
    done, failed = 0, []
    for key, slug in session.execute(select(ServiceAccountKey, Site.slug).join(
            Site, Site.id == ServiceAccountKey.site_id).order_by(Site.slug)).all():
        try:
            key.sealed = sealing.reseal(config, key.sealed)
            done += 1
        except sealing.CannotOpen as exc:
            failed.append((slug, str(exc)))
    return done, failed
