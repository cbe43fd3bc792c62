"""What a batch of small sites costs, per site: process CPU time (which other work on the
machine moves least), statements a batch, time inside them, and the garbage collector's share;
for generation alone (jobs.generate_many_if_due) and with announcements planned
(jobs.regenerate_many_if_due), each batch as the worker's regenerate_due task runs it.

    python bench/batch_cost.py [--sites 1000] [--postgresql URL] [--sqlite] [-v] [--profile]
"""
import argparse
import collections
import cProfile
import gc
import os
import pstats
import tempfile
import time
from pathlib import Path

import many_sites as bench  # bench/ is the script's folder
from common import drop_schema


def run(kind, server_url, folder, args):
    from sqlalchemy import event

    import webapp
    from webapp.tasks import queue
    if args.batch:
        queue.BATCH = args.batch
    BATCH = queue.BATCH
    print("code:", os.path.dirname(webapp.__file__), "BATCH", BATCH)

    label = f"perf_measure_{os.getpid()}"
    url = bench.new_database(folder, server_url, label)
    try:
        app = bench.make_app(url, folder / "a")
        n = args.sites
        bench.add_sites(url, 1, 4 * n + 2 * BATCH, 100, history=False)
        bench._in_batches(app, bench._due(url, 4 * n + 1, BATCH))  # warm up
        bench._in_batches(app, bench._due(url, 4 * n + 1 + BATCH, BATCH), announce=True)
        engine = app.extensions["db_engine"]
        for label_, first, announce in (("generation", 1, False),
                                        ("generation+announce", n + 1, True)):
            stats = collections.defaultdict(lambda: [0, 0.0])
            starts = {}

            def before(conn, cursor, statement, params, context, executemany, starts=starts):
                starts[id(cursor)] = time.perf_counter()

            def after(conn, cursor, statement, params, context, executemany, starts=starts,
                      stats=stats):
                took = time.perf_counter() - starts.pop(id(cursor))
                key = " ".join(statement.split())[:110]
                stats[key][0] += 1
                stats[key][1] += took

            event.listen(engine, "before_cursor_execute", before)
            event.listen(engine, "after_cursor_execute", after)
            ids = bench._due(url, first, n)
            if args.profile:
                profiler = cProfile.Profile()
                profiler.enable()
            gcs = {"t": 0.0, "n": collections.Counter()}
            def on_gc(phase, info, gcs=gcs):
                if phase == "start":
                    gcs["s"] = time.process_time()
                else:
                    gcs["t"] += time.process_time() - gcs["s"]; gcs["n"][info["generation"]] += 1
            gc.callbacks.append(on_gc)
            cpu, wall = time.process_time(), time.perf_counter()
            bench._in_batches(app, ids, announce=announce)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            gc.callbacks.remove(on_gc)
            print(f"   gc: {gcs['t'] / n * 1000:.2f} ms a site CPU, collections by generation {dict(gcs['n'])}")
            if args.profile:
                profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(35)
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(r"webapp/", 30)
            event.remove(engine, "before_cursor_execute", before)
            event.remove(engine, "after_cursor_execute", after)
            batches = -(-n // BATCH)
            count = sum(c for c, _ in stats.values())
            inside = sum(t for _, t in stats.values())
            print(f"{kind} {label_}: {n} sites, BATCH={BATCH}: CPU {cpu / n * 1000:.2f} ms a site, "
                  f"wall {wall / n * 1000:.2f} ms a site, {count / batches:.1f} statements a "
                  f"batch, inside statements {inside / n * 1000:.2f} ms a site")
            if args.verbose:
                for key, (c, t) in sorted(stats.items(), key=lambda kv: -kv[1][1]):
                    print(f"   {c / batches:6.1f}/batch {t / n * 1000:6.3f} ms/site  {key}")
        app.extensions["db_engine"].dispose()
    finally:
        if server_url:
            drop_schema(server_url, label)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sites", type=int, default=1000)
    parser.add_argument("--postgresql", default=None)
    parser.add_argument("--sqlite", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--batch", type=int, default=0, help="sites a batch (default: BATCH)")
    args = parser.parse_args()
    targets = ([("sqlite", None)] if args.sqlite else []) + \
        ([("postgresql", args.postgresql)] if args.postgresql else [])
    for kind, server_url in targets:
        with tempfile.TemporaryDirectory() as folder:
            run(kind, server_url, Path(folder), args)


if __name__ == "__main__":
    main()
