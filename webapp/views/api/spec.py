"""The OpenAPI 3.1 document of /api/v1: the contract the views validate request bodies against
and a fuzzing test (schemathesis) checks every response against."""

from __future__ import annotations

from webapp.protocol import CHANGEFREQS, MAX_URLS_PER_FILE
from webapp.urls import MAX_ITEMS
from webapp.views.api.spec_videos import VIDEO_SCHEMAS


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


STRING = {"type": "string"}
COUNT = {"type": "integer", "minimum": 0}
MOMENT = {"type": "string", "format": "date-time"}
PRIORITY = {"type": "number", "minimum": 0, "maximum": 1}
CHANGEFREQ = {"type": "string", "enum": list(CHANGEFREQS)}

# The settings a token may change (the Search Console key file is a path on the server: it is
# set by the server's operator in the dashboard or the CLI, never over the API).
SETTINGS = {
    "name": {"type": "string", "minLength": 1, "maxLength": 200},
    "slug": {"type": "string", "minLength": 1, "maxLength": 64},
    "base_url": STRING,
    "sitemap_url": STRING,
    "encoding": STRING,
    "default_changefreq": nullable(CHANGEFREQ),
    "default_priority": nullable(PRIORITY),
    "max_urls_per_file": {"type": "integer", "minimum": 1, "maximum": MAX_URLS_PER_FILE},
    "stylesheet": {"type": "boolean"},
    "robots_txt": nullable(STRING),
    "indexnow_enabled": {"type": "boolean"},
    "indexnow_key": {"type": "string", "description": "8 to 128 letters, digits or '-'; `new` "
                                                      "makes a fresh random key"},
    "indexnow_key_location": {"type": "string", "enum": ["root", "sitemap"]},
    "indexnow_endpoint": nullable(STRING),
    "gsc_property": nullable(STRING),
    "gsc_endpoint": {**nullable(STRING), "description": "an operator's setting: only an "
                     "admin's write token for all sites may change it (else 403)"},
    "ping_urls": {**nullable({"type": "array", "items": STRING}),
                  "description": "URL templates with {sitemap}, fetched after each change; "
                                 "null or [] clears them"},
    "schedule": {"type": "string", "description": "`every 30m`, `cron:0 3 * * *` or `off`"},
    "change_delay": {"type": "integer", "minimum": 0, "maximum": 86400},
    "timezone": STRING,
    "exclude": {**nullable({"type": "array", "items": STRING}),
                "description": "exclusion rules, one per item: a path glob (/tmp/*) or re: and "
                               "a regular expression (RE2); null or [] clears them"},
    "sections": {**nullable({"type": "array", "items": STRING}),
                 "description": "sections, one per item: `NAME PATTERN`, a name (lower-case "
                                "letters, digits, '-') and a path prefix (/blog/), glob or re: "
                                "regular expression; each is published in sitemap-NAME-1.xml, "
                                "...; the first match wins; null or [] clears them"},
    "strip_params": {**nullable(STRING), "description": "query parameters to remove from "
                     "every URL, a comma list of globs (utm_*,gclid)"},
    "discover_mode": {"type": "string", "enum": ["review", "add"]},
    "lastmod_source": {"type": "string", "enum": ["given", "content", "newest"],
                       "description": "where a published lastmod comes from: as given, when "
                       "verification last saw the content change, or the newest of the two"},
    "leave_out": {"type": "string", "description": "a comma list of broken, redirected, "
                  "noindex, canonical: URLs whose last check found one are left out"},
    "verify_schedule": {"type": "string",
                        "description": "when to verify: `every 1d`, `cron:0 4 * * *` or `off`"},
    "user_agent": {**nullable(STRING), "description": "the User-Agent verification sends; "
                   "null or empty for the default"},
    "verify_ignore": {**nullable(STRING), "description": "regular expressions, one a line, "
                      "of page text that is no change"},
    "news_name": {**nullable({"type": "string", "maxLength": 200}), "description": "the "
                  "publication's name on Google News; set, the site publishes sitemap-news.xml "
                  "of its articles of the last two days; null or empty turns it off"},
    "news_language": {**nullable(STRING), "description": "ISO 639 code of 2 or 3 letters, or "
                      "zh-cn / zh-tw; required with news_name"},
}
NEWS = {"type": "object", "required": ["publication_date", "title"],
        "additionalProperties": False,
        "properties": {"publication_date": {"type": "string", "description": "W3C date with at "
                                            "least the day, normalised as lastmod is"},
                       "title": {"type": "string", "minLength": 1, "maxLength": 2000}}}

SCHEMAS = {
    "Error": {
        "type": "object", "required": ["error"],
        "properties": {"error": {
            "type": "object", "required": ["status", "code", "message", "errors"],
            "properties": {
                "status": {"type": "integer"},
                "code": STRING,
                "message": STRING,
                "errors": {"type": "array", "items": ref("FieldError")},
            },
        }},
    },
    "FieldError": {
        "type": "object", "required": ["field", "rule", "message"],
        "properties": {"index": {"type": "integer", "description": "the item of a bulk request"},
                       "field": STRING, "rule": STRING, "message": STRING},
    },
    "Site": {
        "type": "object",
        "required": ["slug", "url_count", "change_seq", "generated_seq", "next_run_at",
                     "last_generation", "created_at", "updated_at", *SETTINGS],
        "properties": {
            **SETTINGS,
            "url_count": COUNT,
            "change_seq": {**COUNT, "description": "raised by each change to the site's URLs"},
            "generated_seq": {**COUNT, "description": "the change_seq the last run included"},
            "next_run_at": nullable(MOMENT),
            "last_generation": nullable(ref("Generation")),
            "created_at": MOMENT,
            "updated_at": MOMENT,
        },
    },
    "SitePage": {"type": "object", "required": ["items", "next_cursor"],
                 "properties": {"items": {"type": "array", "items": ref("Site")},
                                "next_cursor": nullable(STRING)}},
    "SiteCreate": {"type": "object", "required": ["name", "base_url"],
                   "properties": SETTINGS, "additionalProperties": False},
    "SiteUpdate": {"type": "object", "properties": SETTINGS, "additionalProperties": False},
    "UrlIn": {
        "type": "object", "required": ["loc"], "additionalProperties": False,
        "description": "Fields left out keep their stored values; null clears lastmod, "
                       "changefreq or priority, [] clears images and videos, {} alternates.",
        "properties": {
            "loc": {"type": "string", "description": "absolute URL under the site's base URL; "
                                                     "a fragment (#...) is removed, with a note"},
            "lastmod": nullable({"type": "string", "description": "W3C date or date-time"}),
            "changefreq": nullable(CHANGEFREQ),
            "priority": nullable(PRIORITY),
            "images": {"type": "array", "items": STRING},
            "alternates": {"type": "object", "additionalProperties": STRING,
                           "description": "hreflang: URL, the page itself included"},
            "videos": {"type": "array", "items": ref("VideoIn"),
                       "description": "replace the page's videos (errors name videos[N].field)"},
            "news": {**nullable(NEWS), "description": "the Google News article data; null "
                     "removes it"},
        },
    },
    "Url": {
        "type": "object",
        "required": ["loc", "lastmod", "changefreq", "priority", "images", "alternates", "videos",
                     "news", "deleted_at", "change_seq", "updated_at"],
        "properties": {
            "loc": STRING,
            "lastmod": nullable(STRING),
            "changefreq": nullable(CHANGEFREQ),
            "priority": nullable(PRIORITY),
            "images": {"type": "array", "items": STRING},
            "alternates": {"type": "object", "additionalProperties": STRING},
            "videos": {"type": "array", "items": ref("Video")},
            "news": nullable(NEWS),
            "deleted_at": nullable(MOMENT),
            "change_seq": COUNT,
            "updated_at": MOMENT,
        },
    },
    "UrlPage": {"type": "object", "required": ["items", "next_cursor"],
                "properties": {"items": {"type": "array", "items": ref("Url")},
                               "next_cursor": nullable(STRING)}},
    "UrlUpsert": {"type": "object", "required": ["urls"], "additionalProperties": False,
                  "properties": {"urls": {"type": "array", "items": ref("UrlIn"),
                                          "maxItems": MAX_ITEMS}}},
    "UrlDelete": {"type": "object", "required": ["locs"], "additionalProperties": False,
                  "properties": {"locs": {"type": "array", "items": STRING,
                                          "maxItems": MAX_ITEMS}}},
    "FieldNote": {
        "type": "object", "required": ["index", "field", "message"],
        "description": "an item kept with a change its rules made, e.g. a fragment removed",
        "properties": {"index": {"type": "integer"}, "field": STRING, "message": STRING},
    },
    "UpsertResult": {
        "type": "object", "required": ["created", "updated", "unchanged", "errors", "notes"],
        "properties": {"created": COUNT, "updated": COUNT, "unchanged": COUNT,
                       "errors": {"type": "array", "items": ref("FieldError")},
                       "warnings": {"type": "array", "items": ref("WriteWarning")},
                       "notes": {"type": "array", "items": ref("FieldNote")},
                       "excluded": {"type": "object", "additionalProperties": COUNT,
                                    "description": "items refused by each of the site's "
                                                   "exclusion rules (rule -> count); each is "
                                                   "in errors too"}},
    },
    "WriteWarning": {
        "type": "object", "required": ["rule", "count", "message"],
        "description": "stored, but will not work as meant (hreflang_reciprocal: alternates "
                       "that do not list their page back; the first pairs are named)",
        "properties": {"rule": STRING, "count": COUNT, "message": STRING,
                       "pairs": {"type": "array", "items": {
                           "type": "object", "properties": {"loc": STRING,
                                                            "alternate": STRING}}}},
    },
    "DeleteResult": {
        "type": "object", "required": ["deleted", "not_found", "errors", "notes"],
        "properties": {"deleted": COUNT, "not_found": {"type": "array", "items": STRING},
                       "errors": {"type": "array", "items": ref("FieldError")},
                       "notes": {"type": "array", "items": ref("FieldNote")}},
    },
    "Task": {
        "type": "object", "required": ["id", "kind", "site", "status", "done", "total", "message"],
        "properties": {
            "id": STRING, "kind": STRING, "site": STRING,
            "status": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
            "done": COUNT, "total": nullable(COUNT), "message": STRING,
            "created_at": MOMENT, "started_at": nullable(MOMENT),
            "finished_at": nullable(MOMENT),
        },
    },
    "Generation": {
        "type": "object",
        "required": ["id", "number", "status", "started_at", "finished_at", "url_count",
                     "file_count", "bytes", "error", "rollback_of", "trigger"],
        "properties": {
            # number: the generation's place among its site's, as the dashboard and the CLI
            # say it; id: the installation's, as rollback_of and the ledger's generation_id.
            "id": {"type": "integer"}, "number": {"type": "integer", "minimum": 1},
            "status": {"type": "string", "enum": ["running", "publishing", "succeeded", "unchanged",
                                                  "superseded", "failed"]},
            "started_at": MOMENT, "finished_at": nullable(MOMENT),
            "url_count": COUNT, "file_count": COUNT, "bytes": COUNT,
            "error": nullable(STRING), "rollback_of": nullable({"type": "integer"}),
            # What started the run; null for runs recorded before it was kept.
            "trigger": nullable({"type": "string", "enum": ["schedule", "change", "button",
                                                            "api", "cli", "rollback"]}),
        },
    },
    "GenerationPage": {"type": "object", "required": ["items", "next_cursor"],
                       "properties": {"items": {"type": "array", "items": ref("Generation")},
                                      "next_cursor": nullable(STRING)}},
    "Announcement": {
        "type": "object",
        "required": ["id", "engine", "status", "generation_id", "target", "url_count",
                     "attempts", "attempt_limit", "http_status", "outcome", "created_at",
                     "next_attempt_at", "last_attempt_at", "finished_at"],
        "properties": {
            "id": {"type": "integer"},
            "engine": {"type": "string", "enum": ["indexnow", "gsc", "ping"]},
            "status": {"type": "string",
                       "enum": ["pending", "sending", "delivered", "accepted", "failed"]},
            "generation_id": nullable({"type": "integer"}),
            "target": nullable(STRING),
            "url_count": COUNT, "attempts": COUNT, "attempt_limit": COUNT,
            "http_status": nullable({"type": "integer"}),
            "outcome": nullable(STRING),
            "created_at": MOMENT, "next_attempt_at": nullable(MOMENT),
            "last_attempt_at": nullable(MOMENT), "finished_at": nullable(MOMENT),
        },
    },
    "AnnouncementPage": {"type": "object", "required": ["items", "next_cursor"],
                         "properties": {"items": {"type": "array", "items": ref("Announcement")},
                                        "next_cursor": nullable(STRING)}},
}

ERRORS = {
    "400": "a query parameter or the JSON is malformed",
    "401": "no token, or not a valid one",
    "403": "the token may not do this",
    "404": "no such site (or not one of the token's), URL or task",
    "409": "conflicts with stored data, or with a generation in progress",
    "413": "the body is over 32 MiB or holds more than 10,000 items",
    "415": "the body is not JSON",
    "422": "the body breaks a rule; `errors` names each field and rule",
    "429": "over the token's rate limit; Retry-After says when to try again",
    "503": "the database is busy or unreachable; send the request again",
}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _operation(summary: str, ok: tuple[str, str, str], errors: str, parameters=(),
               body: str | None = None, operation_id: str = "") -> dict:
    """An operation: its success (status, schema, description) and the errors it can answer."""
    status, schema, description = ok
    responses = {status: _json(ref(schema), description)}
    for code in ("400 401 403 429 503 " + errors).split():
        responses[code] = _json(ref("Error"), ERRORS[code])
    operation = {"summary": summary, "operationId": operation_id, "responses": responses,
                 "parameters": list(parameters)}
    if body:
        operation["requestBody"] = {"required": True,
                                    "content": {"application/json": {"schema": ref(body)}}}
    return operation


SLUG = {"name": "slug", "in": "path", "required": True, "schema": STRING,
        "description": "the site's slug"}
LIMIT = {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1,
                                                   "maximum": 1000, "default": 100}}
CURSOR = {"name": "cursor", "in": "query",
          "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]*$"},
          "description": "next_cursor of the page before, unchanged"}
ID_CURSOR = {**CURSOR, "schema": {"type": "string", "pattern": "^[0-9]{0,18}$"}}
PREFIX = {"name": "prefix", "in": "query", "schema": STRING,
          "description": "only URLs starting with this (a path, or a whole URL)"}
STATUS = {"name": "status", "in": "query",
          "schema": {"type": "string", "enum": ["live", "deleted", "all"], "default": "live"}}
LOC = {"name": "loc", "in": "query", "required": True, "schema": STRING}
TASK_ID = {"name": "task_id", "in": "path", "required": True,
           "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"}}

PATHS = {
    "/sites": {
        "get": _operation("A page of the sites this token may see, in slug order",
                          ("200", "SitePage", "the page"), "", [LIMIT, CURSOR],
                          operation_id="listSites"),
        "post": _operation("Create a site (a write token for all sites)",
                           ("201", "Site", "the new site"), "409 413 415 422",
                           body="SiteCreate", operation_id="createSite"),
    },
    "/sites/{slug}": {
        "get": _operation("One site", ("200", "Site", "the site"), "404", [SLUG],
                          operation_id="getSite"),
        "patch": _operation("Change some of a site's settings",
                            ("200", "Site", "the site as now stored"), "404 409 413 415 422",
                            [SLUG], body="SiteUpdate", operation_id="updateSite"),
    },
    "/sites/{slug}/urls": {
        "get": _operation("A page of the site's URLs, in loc order",
                          ("200", "UrlPage", "the page"), "404",
                          [SLUG, LIMIT, CURSOR, PREFIX, STATUS], operation_id="listUrls"),
        "post": _operation("Add or update up to 10,000 URLs by loc; invalid items are reported",
                           ("200", "UpsertResult", "valid items stored, invalid ones listed"),
                           "404 413 415 422", [SLUG], body="UrlUpsert", operation_id="upsertUrls"),
        "delete": _operation("Delete one URL", ("200", "DeleteResult", "deleted"), "404 422",
                             [SLUG, LOC], operation_id="deleteUrl"),
    },
    "/sites/{slug}/urls/delete": {
        "post": _operation("Delete up to 10,000 URLs by loc",
                           ("200", "DeleteResult", "what was deleted and what was not found"),
                           "404 413 415 422", [SLUG], body="UrlDelete", operation_id="deleteUrls"),
    },
    "/sites/{slug}/generate": {
        "post": _operation("Regenerate now, then announce (in the background)",
                           ("202", "Task", "started; poll the task"), "404 409", [SLUG],
                           operation_id="generateSite"),
    },
    "/sites/{slug}/notify": {
        "post": _operation("Announce what changed now (in the background)",
                           ("202", "Task", "started; poll the task"), "404", [SLUG],
                           operation_id="notifySite"),
    },
    "/sites/{slug}/generations": {
        "get": _operation("The site's generations, newest first",
                          ("200", "GenerationPage", "the page"), "404", [SLUG, LIMIT, ID_CURSOR],
                          operation_id="listGenerations"),
    },
    "/sites/{slug}/announcements": {
        "get": _operation("The site's announcements to search engines, newest first",
                          ("200", "AnnouncementPage", "the page"), "404", [SLUG, LIMIT, ID_CURSOR],
                          operation_id="listAnnouncements"),
    },
    "/tasks/{task_id}": {
        "get": _operation("A background task started by generate or notify",
                          ("200", "Task", "its state"), "404", [TASK_ID], operation_id="getTask"),
    },
}

SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "Sitemap dashboard API", "version": "1",
             "description": "Keep a site's URLs in sync from a content system. Send "
                            "`Authorization: Bearer <token>`; tokens are made in the dashboard "
                            "(Tokens) or with `flask --app webapp tokens create`."},
    "servers": [{"url": "/api/v1"}],
    "security": [{"bearer": []}],
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {**SCHEMAS, **VIDEO_SCHEMAS},
    },
    "paths": PATHS,
}
