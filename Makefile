# The README's two commands, `make run` and `make test`, start here.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 5000
export PORT
STAMP := $(VENV)/.installed-stamp

WORKERS ?= 2
BIND ?= 127.0.0.1:$(PORT)

.PHONY: install run run-prod test bench clean

install: $(STAMP)

# Reinstall whenever the dependency list changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The web server and the scheduler process run side by side; when the server stops (Ctrl-C),
# the scheduler is stopped too and allowed to finish the run in hand.
run: install
	$(BIN)/alembic upgrade head
	$(BIN)/flask --app webapp users ensure-admin
	$(BIN)/flask --app webapp scheduler run & scheduler=$$!; \
	$(BIN)/flask --app webapp run --host 127.0.0.1 --port $(PORT) & web=$$!; \
	trap 'kill $$web $$scheduler 2>/dev/null; wait $$scheduler' EXIT INT TERM; \
	wait $$web

# Production: gunicorn with WORKERS workers (settings in webapp/gunicorn_conf.py) and the
# scheduler process, against the DATABASE_URL given (PostgreSQL); migrations first.
# GET /healthz answers the load balancer.
run-prod: install
	@case "$$DATABASE_URL" in postgres*) ;; *) echo "run-prod needs DATABASE_URL=postgresql://..." >&2; exit 2;; esac
	$(BIN)/alembic upgrade head
	$(BIN)/flask --app webapp users ensure-admin
	$(BIN)/flask --app webapp scheduler run & scheduler=$$!; \
	$(BIN)/gunicorn -c python:webapp.gunicorn_conf --workers $(WORKERS) --bind $(BIND) \
		'webapp:create_app()' & web=$$!; \
	trap 'kill $$web $$scheduler 2>/dev/null; wait $$web $$scheduler' EXIT INT TERM; \
	wait $$web

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# With TEST_POSTGRESQL_URL set, the database benchmarks also run on PostgreSQL (each in a
# schema of its own, dropped at the end).
PG_BENCH := $(if $(TEST_POSTGRESQL_URL),--postgresql $(TEST_POSTGRESQL_URL))

bench: install
	$(BIN)/python bench/generate.py --urls 100000 1000000 $(PG_BENCH)
	$(BIN)/python bench/import.py --urls 1000000 $(PG_BENCH)
	$(BIN)/python bench/dashboard.py --urls 1000000
	$(BIN)/python bench/many_sites.py --profile 100 $(PG_BENCH)
	$(BIN)/python bench/incremental.py --urls 1000000 $(PG_BENCH)
	$(BIN)/python bench/load.py --urls 1000000 --seconds 20
	$(if $(TEST_POSTGRESQL_URL),$(BIN)/python bench/load.py --urls 1000000 --seconds 20 $(PG_BENCH))
	command -v nginx >/dev/null && command -v wrk >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk)
	$(BIN)/python bench/serve.py

clean:
	rm -rf $(VENV) *.egg-info
