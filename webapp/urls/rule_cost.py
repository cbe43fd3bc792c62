"""What a site's exclusion rules may cost a web request, and which stored rules are over the
caps on their cost (exclusions.MAX_RULE_PROGRAM, MAX_RULES_PROGRAM).

Within the caps, a rule set can still take tens of milliseconds on a URL of 2,048 characters
(bench/exclusions.py): an upsert of the API's 10,000 such URLs would hold a web thread for
minutes. A request is therefore refused, before any URL is checked, when the characters it
would have searched times the rules' program size pass MAX_RULE_WORK; a page counting the
stored URLs the rules match stops there too.
"""

from __future__ import annotations

from webapp.errors import InvalidValue, rule_text
from webapp.urls.exclusions import check_rule, check_together, program_size

# What a web request may ask of the rules: the characters searched (`searched`) times the
# rules' program size. At worst about 30 ns each on this project's machines, an excluded URL
# searched again by each rule included (bench/exclusions.py): about 9 s of one web thread.
MAX_RULE_WORK = 300_000_000


def searched(loc: str) -> int:
    """How many characters of a URL the rules search at most: all of it (more than its path),
    twice when it has a %-escape (as stored and decoded)."""
    return len(loc) * (2 if "%" in loc else 1)


def check_work(rules: tuple[str, ...], locs: list[object], field: str) -> None:
    """Refuse, before any is checked, URLs that would keep a web thread checking them against
    `rules` for longer than MAX_RULE_WORK allows (the characters searched times the rules'
    program size), saying how many characters would fit."""
    size = program_size(rules) or 0
    chars = sum(searched(loc) for loc in locs if isinstance(loc, str))
    if size and chars * size > MAX_RULE_WORK:
        raise InvalidValue(field, f"{len(locs)} URLs, {chars} characters", rule_text(
            "are too many to check against the site's exclusion rules in one request: the "
            "rules compile to %(size)s RE2 instructions, against which one request may carry "
            "URLs of at most %(fit)s characters together (twice for those with %%-escapes); "
            "send fewer URLs per request, or simplify the rules",
            size=size, fit=MAX_RULE_WORK // size))


def over_cost(rules: tuple[str, ...]) -> list[str]:
    """The stored rules that break a cap on cost (saved before there was one): each too costly
    itself, and the one from which they are together. They still apply, each URL checked
    slowly (a web request may carry fewer URLs, `check_work`); the settings page names them."""
    over = []
    for rule in rules:
        try:
            check_rule(rule)
        except InvalidValue:
            over.append(rule)
    try:
        check_together(rules)
    except InvalidValue as exc:
        over += [exc.value] if exc.value not in over else []
    return over
