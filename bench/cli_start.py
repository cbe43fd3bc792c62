"""What a CLI command costs before it does anything: `flask --app webapp sites show SITE` against
`python -c "import flask, sqlalchemy"` in the same environment, wall time and peak memory.

    python bench/cli_start.py [--runs 9]

Each command runs --runs times, alternating, in a fresh instance folder holding one site; the
figures are the medians of wall time and of peak resident memory (the child's ru_maxrss), and the
shortest CPU time (user + system), which other processes on a busy machine disturb least.
Targets: the command within 2x of the floor's wall time, and under 80 MB.

The first run writes the app's bytecode (__pycache__) even where PYTHONDONTWRITEBYTECODE is
set, as Python does on a user's machine by default; the floor's libraries have theirs from pip.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import fresh_site_database

BIN = Path(sys.executable).parent


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, peak MB and CPU seconds of one run of `command` (run in a child of a
    child, so that RUSAGE_CHILDREN is this command's own and not an earlier one's)."""
    probe = ("import resource, subprocess, sys, time; start = time.perf_counter(); "
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
             "used = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print(time.perf_counter() - start, used.ru_maxrss, used.ru_utime + used.ru_stime)")
    out = subprocess.run([sys.executable, "-c", probe, *command], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024, float(out[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        fresh_site_database(Path(folder) / "sitemaps.db")
        env = {**os.environ, "INSTANCE_PATH": folder, "DATABASE_URL": f"sqlite:///{folder}/sitemaps.db"}
        commands = {
            "floor": [sys.executable, "-c", "import flask, sqlalchemy"],
            "cli": [str(BIN / "flask"), "--app", "webapp", "sites", "show", "shop"],
        }
        writing = {name: value for name, value in env.items()
                   if name != "PYTHONDONTWRITEBYTECODE"}
        measure(commands["cli"], writing)  # warm the file cache and write the bytecode once
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                figures[name].append(measure(command, env))
    wall = {name: statistics.median(run[0] for run in runs) for name, runs in figures.items()}
    memory = {name: statistics.median(run[1] for run in runs) for name, runs in figures.items()}
    cpu = {name: min(run[2] for run in runs) for name, runs in figures.items()}
    print(f"{'command':48} {'wall s':>7} {'peak MB':>8} {'cpu s':>6}   ({args.runs} runs each; "
          f"load average {os.getloadavg()[0]:.1f})")
    names = {"floor": 'python -c "import flask, sqlalchemy"',
             "cli": "flask --app webapp sites show shop"}
    for name, said in names.items():
        print(f"{said:48} {wall[name]:7.3f} {memory[name]:8.1f} {cpu[name]:6.3f}")
    print(f"ratio {wall['cli'] / wall['floor']:.2f}x of the floor's wall time (target <= 2x; "
          f"CPU {cpu['cli'] / cpu['floor']:.2f}x), {memory['cli']:.1f} MB (target < 80 MB)")


if __name__ == "__main__":
    main()
