"""The API fuzzed from its own OpenAPI document with schemathesis: for every operation, data
that fits the document and data that breaks it. No answer may be a 500, and every answer must
match the document (status, content type, headers, body schema)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection

from tests.builders import make_site, make_urls, served
from webapp.accounts.tokens import create_token, digest
from webapp.accounts.users import create_user
from webapp.views.api.spec import SPEC

# The fuzzing token's secret is fixed, so that schemathesis itself sends it as the document's
# bearer scheme (and knows a case without it is one it made without auth on purpose).
SECRET = "smd_fuzzing-token-for-tests-only-0123456789abcdef"
CONFIG = schemathesis.Config.from_dict({
    "auth": {"openapi": {"bearer": {"bearer": SECRET}}},
    # Most cases then act on the stored site rather than answer 404 at once.
    "parameters": {"path.slug": "shop"},
    "generation": {"max-examples": 40},
    # The document gives each field's type and range; the rules a schema cannot say (a
    # schedule's syntax, a time zone's name, a URL inside the site) answer 422 naming the field
    # and the rule. So 422 is a right answer to schema-valid data too, and 400 to a cursor
    # of the right characters that the API never gave out.
    "checks": {"positive_data_acceptance": {
        "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "422", "429"]}},
})
# Generating and announcing start background work that sends requests to the engines a site
# names; fuzzed settings could name any host, and tests never reach beyond 127.0.0.1. Those
# two operations are covered by test_api.py against the fake engine instead.
schema = schemathesis.openapi.from_dict(SPEC, config=CONFIG).exclude(
    operation_id=["generateSite", "notifySite"])


@pytest.fixture
def fuzzing_token(app):
    app.config["API_RATE_LIMIT"] = 10 ** 6
    with app.extensions["db_sessionmaker"]() as session:
        site = make_site(session)
        make_urls(session, site, 5, lastmod="2026-01-01")
        user = create_user(session, "cms@example.com", "correct horse", "editor")
        token, _ = create_token(session, user, "fuzz", "write", None)
        token.secret_hash = digest(SECRET)
        session.commit()


@pytest.fixture
def api_url(app):
    """The app served over real HTTP on 127.0.0.1, as clients meet it."""
    with served(app) as base_url:
        yield base_url + "/api/v1"


def test_the_served_document_is_the_one_fuzzed(client):
    assert client.get("/api/v1/openapi.json").json == SPEC


@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_keeps_to_its_document(case, api_url, fuzzing_token):
    excluded = []
    if case.operation.definition.raw.get("operationId") in ("upsertUrls", "deleteUrls"):
        # By design: a bulk request stores its valid items and reports each invalid one in a
        # 200 answer, so an item that breaks the item schema is not a rejected request.
        excluded.append(negative_data_rejection)
    case.call_and_validate(base_url=api_url, excluded_checks=excluded)
