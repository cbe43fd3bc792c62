"""Secrets the app must read back (a Search Console service-account key), stored encrypted.

Fernet (AES-128-CBC with an HMAC-SHA256, from `cryptography`) under a key derived by HKDF
from CREDENTIALS_KEY, or from SECRET_KEY when that is unset. Rotation: set the new key in
CREDENTIALS_KEY and the old ones in CREDENTIALS_OLD_KEYS; anything sealed under an old key
still opens, and `flask credentials rotate` seals it again under the new one.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.fernet import Fernet, MultiFernet

# cryptography (9 MB) is imported where a secret is sealed or opened, not above: the modules
# that import this one are loaded by every page and command, and few of them open a secret.

_PURPOSE = b"sitemap-dashboard: sealed credentials"


class CannotOpen(Exception):
    """A sealed value that none of the configured keys opens."""


def _fernet(secret: str) -> Fernet:
    """A Fernet key derived from any secret text: the same text always gives the same key."""
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                   info=_PURPOSE).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def _keys(config: Mapping) -> MultiFernet:
    """The current key first (it seals), then the old ones (they only open)."""
    from cryptography.fernet import MultiFernet

    current = config.get("CREDENTIALS_KEY") or config["SECRET_KEY"]
    return MultiFernet([_fernet(current),
                        *(_fernet(old) for old in config.get("CREDENTIALS_OLD_KEYS", ()))])


def seal(config: Mapping, data: bytes) -> str:
    return _keys(config).encrypt(data).decode("ascii")


def unseal(config: Mapping, sealed: str) -> bytes:
    from cryptography.fernet import InvalidToken

    try:
        return _keys(config).decrypt(sealed.encode("ascii"))
    except InvalidToken:
        raise CannotOpen("the stored key cannot be decrypted with CREDENTIALS_KEY or any of "
                         "CREDENTIALS_OLD_KEYS (was the key changed without listing the old "
                         "one?)") from None


def reseal(config: Mapping, sealed: str) -> str:
    """The same secret sealed under the current key (CannotOpen when no key opens it)."""
    from cryptography.fernet import InvalidToken

    try:
        return _keys(config).rotate(sealed.encode("ascii")).decode("ascii")
    except InvalidToken:
        unseal(config, sealed)  # raises the explanation
        raise
