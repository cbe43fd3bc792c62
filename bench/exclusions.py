"""What exclusion rules cost a web thread: per URL of the longest length, and for the largest
upsert the API accepts with them, before the cost cap (the probe's four rules) and after it
(the costliest rules found that the caps accept).

    python bench/exclusions.py [--urls 10]

Prints, for each rule set: its RE2 program size, milliseconds to check one URL of 2,048
characters (every URL excluded, so each rule is searched again as well), the URLs of that
length one upsert may carry (exclusions.check_work; MAX_ITEMS without a cap), the seconds
they cost, and the nanoseconds one unit of MAX_RULE_WORK (a character times an instruction)
took.
"""

from __future__ import annotations

import argparse
import random
import time

from common import BASE  # bench/ is the script's folder; common puts the project on sys.path

from webapp.urls import MAX_ITEMS
from webapp.urls.exclusions import Rules, program_size
from webapp.urls.rule_cost import MAX_RULE_WORK, searched

LONGEST = 2_048  # a loc's most characters (models.URL_LENGTH)

# The probe's rules: each 6,004 instructions, 0.3 s a URL; saved before the cap.
BEFORE = tuple(f"re:({c}|{c}{c}){{0,1000}}$" for c in "abcd")
# The costliest the caps accept that were found: counted repeats after an ambiguous start,
# whose DFA meets a new state at nearly every character (500 and 2,000 instructions: caps).
AFTER = ("re:(?:a|b)*a(?:a|b){480}(?:x|y)*", "re:(?:a|b)*b(?:a|b){480}(?:x|y)*",
         "re:(?:a|b)*a(?:a|b){479}(?:x|z)*", "re:(?:a|b)*b(?:a|b){479}(?:x|z)*")
# The costliest found for each of its instructions: what one unit of MAX_RULE_WORK costs.
DENSE = ("re:(?:a|b)*a(?:a|b){100}(?:x|y)*",)


def urls(count: int, alphabet: str) -> list[str]:
    """Locs of LONGEST characters whose paths are random letters of `alphabet` (the one a
    rule set is slowest on), a %-escape in each (so both forms of the path are searched)."""
    rng = random.Random(1)
    tail = LONGEST - len(BASE) - 3
    return [BASE + "%41" + "".join(rng.choice(alphabet) for _ in range(tail))
            for _ in range(count)]


def measure(name: str, rules: tuple[str, ...], alphabet: str, sample: int) -> float:
    checker = Rules(rules)
    locs = urls(sample + 1, alphabet)
    checker.excluding(locs[0])  # compiled, the cache warm
    started = time.perf_counter()
    excluded = sum(checker.excluding(loc) is not None for loc in locs[1:])
    per_url = (time.perf_counter() - started) / sample
    size = program_size(rules) or 0
    units = searched(locs[1]) * size
    fit = min(MAX_ITEMS, MAX_RULE_WORK // units)
    capped = "capped" if fit < MAX_ITEMS else "MAX_ITEMS"
    print(f"{name:<7} {size:>7} {per_url * 1000:>9.1f} {excluded:>4}/{sample:<4} "
          f"{fit:>6} ({capped:<9}) {fit * per_url:>9.1f} {per_url / units * 1e9:>8.1f}",
          flush=True)
    return per_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=10, help="URLs timed for each rule set")
    args = parser.parse_args()
    print(f"{'rules':<7} {'program':>7} {'ms/URL':>9} {'excluded':>9} {'URLs/upsert':>18} "
          f"{'s/upsert':>9} {'ns/unit':>8}")
    before = measure("before", BEFORE, "a", args.urls)
    after = measure("after", AFTER, "ab", args.urls)
    measure("dense", DENSE, "ab", args.urls)
    for name, per_url in (("before", before), ("after", after)):
        print(f"without check_work, {MAX_ITEMS:,} URLs of {LONGEST:,} characters with the "
              f"'{name}' rules: {MAX_ITEMS * per_url:,.0f} s")


if __name__ == "__main__":
    main()
