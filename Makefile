# The README's two commands, `make run` and `make test`, start here.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 5000
export PORT
STAMP := $(VENV)/.installed-stamp

WORKERS ?= 2
BIND ?= 127.0.0.1:$(PORT)

.PHONY: install run run-prod test bench clean translations tour

CATALOGS := webapp/translations
AXE := tests/browser/node_modules/axe-core/axe.min.js
MO_FILES := $(patsubst %.po,%.mo,$(wildcard $(CATALOGS)/*/LC_MESSAGES/messages.po))

install: $(STAMP) $(MO_FILES)

# axe-core for the browser tests' accessibility scan, at the version package-lock.json pins;
# skipped (and the scan with it, saying why) where npm is not installed.
$(AXE): tests/browser/package.json tests/browser/package-lock.json
	if command -v npm >/dev/null; then npm ci --prefix tests/browser --no-audit --no-fund --silent && touch $@; \
	else echo "npm not found: the axe-core scan in tests/test_pages_browser.py will be skipped"; fi

# The compiled catalogs the dashboard reads, rebuilt whenever a .po file changes.
$(CATALOGS)/%/LC_MESSAGES/messages.mo: $(CATALOGS)/%/LC_MESSAGES/messages.po $(STAMP)
	$(BIN)/pybabel compile --statistics -l $* -i $< -o $@

# Collect every marked string into messages.pot and merge it into each language's .po file:
# then translate what is new (msgstr "") in $(CATALOGS)/ja/LC_MESSAGES/messages.po.
translations: $(STAMP)
	$(BIN)/pybabel extract --no-location --sort-output -F $(CATALOGS)/babel.cfg -k _l -k lazy_gettext \
		-k ngettext:1,2 -k lazy_ngettext:1,2 -k said -k said_plural:1,2 -k rule_text -k lazy_pgettext:1c,2 -k view_text -o $(CATALOGS)/messages.pot .
	$(BIN)/pybabel update --no-fuzzy-matching -i $(CATALOGS)/messages.pot -d $(CATALOGS)

# Reinstall whenever the dependency list changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The web server, the scheduler (the clock) and one worker run side by side, the work queued
# in the instance folder (no broker to install). Ctrl-C stops all three; the scheduler and the
# worker finish the work in hand first.
run: install
	$(BIN)/flask --app webapp config init
	$(BIN)/alembic upgrade head
	@signin=$$($(BIN)/flask --app webapp users ensure-admin) || exit $$?; \
	ready=$$(mktemp -u); \
	$(BIN)/flask --app webapp scheduler run & scheduler=$$!; \
	$(BIN)/flask --app webapp worker --ready-file $$ready & worker=$$!; \
	$(BIN)/flask --app webapp run --host 127.0.0.1 --port $(PORT) & web=$$!; \
	trap 'kill $$web $$scheduler $$worker 2>/dev/null; wait $$scheduler $$worker; rm -f $$ready' EXIT INT TERM; \
	tries=0; until { [ -e $$ready ] && $(BIN)/python -c "$(ANSWERS)" \
		http://127.0.0.1:$(PORT)/healthz 2>/dev/null; } || [ $$tries -ge 300 ]; do \
		tries=$$((tries + 1)); sleep 0.2; done; \
	printf '\n%s\n%s\n%s\n\n' "$(RULE)" "$$signin" "$(RULE)"; \
	wait $$web

# How to sign in is printed last, once the worker takes tasks and the dashboard answers (or
# after a minute without).
ANSWERS := import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)
RULE := ----------------------------------------------------------------------

# Production: gunicorn with WORKERS web workers (settings in webapp/gunicorn_conf.py), the
# scheduler and a Celery worker, against the DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL
# (Redis or RabbitMQ) given; migrations first. More machines run `make run-prod` (or only
# gunicorn, or only `flask --app webapp worker`) against the same three settings.
# GET /healthz answers the load balancer.
run-prod: install
	@$(BIN)/flask --app webapp config check-production
	$(BIN)/alembic upgrade head
	$(BIN)/flask --app webapp users ensure-admin --bind $(BIND)
	$(BIN)/flask --app webapp scheduler run & scheduler=$$!; \
	$(BIN)/flask --app webapp worker & worker=$$!; \
	$(BIN)/gunicorn -c python:webapp.gunicorn_conf --workers $(WORKERS) --bind $(BIND) \
		'webapp:create_app()' & web=$$!; \
	trap 'kill $$web $$scheduler $$worker 2>/dev/null; wait $$web $$scheduler $$worker' EXIT INT TERM; \
	wait $$web

# The whole suite, spread over every core (pytest-xdist); TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= auto
test: install $(AXE)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The README's screenshots (webapp/static/tour/), taken in Chromium from a seeded dashboard.
tour: install
	$(BIN)/python -m tests.browser.tour

# With TEST_POSTGRESQL_URL set, the database benchmarks also run on PostgreSQL (each in a
# schema of its own, dropped at the end).
PG_BENCH := $(if $(TEST_POSTGRESQL_URL),--postgresql $(TEST_POSTGRESQL_URL))

bench: install
	$(BIN)/python bench/cli_start.py
	$(BIN)/python bench/generate.py --urls 100000 1000000 $(PG_BENCH)
	$(BIN)/python bench/import.py --urls 1000000 $(PG_BENCH)
	$(BIN)/python bench/import.py --urls 300000 --format sitemap --other-sites 4 $(PG_BENCH)
	$(BIN)/python bench/exclusions.py
	$(BIN)/python bench/dashboard.py --urls 1000000
	$(BIN)/python bench/many_sites.py --profile 100 $(PG_BENCH)
	$(BIN)/python bench/incremental.py --urls 1000000 $(PG_BENCH)
	$(BIN)/python bench/verify.py --urls 10000 100000
	$(BIN)/python bench/freshness.py --urls 1000000 $(PG_BENCH) $(if $(TEST_REDIS_URL),--redis $(TEST_REDIS_URL))
	$(BIN)/python bench/load.py --urls 1000000 --seconds 20
	$(if $(TEST_POSTGRESQL_URL),$(BIN)/python bench/load.py --urls 1000000 --seconds 20 $(PG_BENCH))
	command -v nginx >/dev/null && command -v wrk >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk)
	$(BIN)/python bench/serve.py

clean:
	rm -rf $(VENV) *.egg-info
