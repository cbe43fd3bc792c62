"""The README's tour: screenshots of the dashboard, seeded with the showcase (tests/showcase.py),
written to webapp/static/tour/. Run `make tour` after changing how a page looks."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from alembic import command
from alembic.config import Config

from tests.builders import served
from tests.showcase import PASSWORD, seed_showcase
from webapp import create_app

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "webapp" / "static" / "tour"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# (file, path, language, viewport width, height): what the README shows
SHOTS = [
    ("sites.png", "/", "en", 1100, 620),
    ("urls-ja.png", "/sites/{slug}/urls", "ja", 1100, 700),
    ("overview-phone.png", "/sites/{slug}", "en", 390, 844),
]


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/tour.db"
        config = Config(str(ROOT / "alembic.ini"))
        config.attributes.update(database_url=url, configure_logger=False)
        command.upgrade(config, "head")
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "tour", "INSTANCE_PATH": folder,
                          "SITEMAPS_DIR": f"{folder}/sitemaps", "CELERY_BROKER_URL": "memory://",
                          "CELERY_TASK_ALWAYS_EAGER": True, "OUTBOUND_ALLOW": "127.0.0.1",
                          "INDEXNOW_ENDPOINT": "http://127.0.0.1:9/indexnow"})
        ids = seed_showcase(app)
        OUT.mkdir(parents=True, exist_ok=True)
        with served(app) as server, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for name, path, language, width, height in SHOTS:
                context = browser.new_context(viewport={"width": width, "height": height},
                                              extra_http_headers={"Accept-Language": language})
                page = context.new_page()
                page.goto(f"{server}/sign-in")
                page.locator("#email").fill("owner@example.com")
                page.locator("#password").fill(PASSWORD)
                page.locator("form button[type=submit]").click()
                page.wait_for_url(f"{server}/")
                page.goto(server + path.format(**ids))
                page.screenshot(path=str(OUT / name))
                context.close()
                print(OUT / name, (OUT / name).stat().st_size, "bytes", file=sys.stderr)
            browser.close()
        app.extensions["db_engine"].dispose()


if __name__ == "__main__":
    main()
