"""Typed SQLAlchemy models: what is stored, and nothing about how it is used. One module per
concern; every model is named here, so `from webapp.models import Site` is how the rest of the
app uses them, and importing this package registers every table on `Base.metadata`."""

from __future__ import annotations

from webapp.models.accounts import ApiToken, ApiTokenSite, SignInThrottle, User, UserSession
from webapp.models.checks import Discovery, UrlCheck, VerifyRun
from webapp.models.common import (
    MAX_ID,
    SITES_FILLFACTOR,
    URL_LENGTH,
    Timestamps,
    new_indexnow_key,
    new_storage_key,
    utcnow,
)
from webapp.models.notify import Delivery, DismissedWarning, NotifyCursor, ServiceAccountKey
from webapp.models.runs import (
    SUCCEEDED_RUN,
    TRIGGERS,
    UNFINISHED_RUN,
    FileBody,
    FileBodyPart,
    Generation,
    GenerationFile,
    StoredFile,
    Task,
)
from webapp.models.sites import Site
from webapp.models.urls import Url, UrlAlternate, UrlImage, UrlNews, UrlVideo

__all__ = [
    "MAX_ID", "SITES_FILLFACTOR", "SUCCEEDED_RUN", "TRIGGERS", "UNFINISHED_RUN", "URL_LENGTH",
    "ApiToken", "ApiTokenSite", "Delivery", "Discovery", "DismissedWarning", "FileBody",
    "FileBodyPart", "Generation", "GenerationFile", "NotifyCursor", "ServiceAccountKey",
    "SignInThrottle", "Site", "StoredFile", "Task", "Timestamps", "Url", "UrlAlternate",
    "UrlCheck", "UrlImage", "UrlNews", "UrlVideo", "User", "UserSession", "VerifyRun",
    "new_indexnow_key", "new_storage_key", "utcnow",
]
