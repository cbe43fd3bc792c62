"""What each task accepts, checked where it starts. A message on the broker is input like any
other (forged, or queued by another version of the app): a task given arguments of the wrong
type or shape logs one line saying which and does nothing, instead of failing half-way with a
traceback.

The rules are the tasks' own annotations (work.py): the plain JSON types, `X | None`,
`list[X]`, and `Annotated[X, Rule(...)]` for a shape (a row id's range, a task id's digits).
"""

from __future__ import annotations

import functools
import inspect
import logging
import types
import typing
from collections.abc import Callable
from typing import Annotated, NamedTuple

log = logging.getLogger(__name__)


class Rule(NamedTuple):
    """A shape a value of the annotated type must also have."""

    holds: Callable[[typing.Any], object]
    says: str  # what the value must be, to finish "must be ..."


Id = Annotated[int, Rule(lambda value: 1 <= value < 2 ** 31, "an id from 1 to 2147483647")]
TaskId = Annotated[str, Rule(lambda value: len(value) == 32 and all(
    c in "0123456789abcdef" for c in value), "32 lowercase hexadecimal digits")]

_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
          type(None): "null"}


def checked(name: str, function: Callable) -> Callable:
    """`function` run only with arguments its annotations accept; else one WARNING line."""
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function, include_extras=True)

    @functools.wraps(function)
    def run(*args, **kwargs):
        problem = mismatch(signature, hints, args, kwargs)
        if problem:
            log.warning("task %s ignored, nothing done: %s", name, problem)
            return None
        return function(*args, **kwargs)

    return run


def mismatch(signature: inspect.Signature, hints: dict, args: tuple, kwargs: dict) -> str | None:
    """What is wrong with the arguments (the first thing found), or None."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        return f"the arguments do not fit ({exc})"
    for parameter, value in bound.arguments.items():
        problem = what_is_wrong(value, hints[parameter], parameter)
        if problem:
            return problem
    return None


def what_is_wrong(value, hint, name: str) -> str | None:
    """What is wrong with `value` as the annotation `hint` of the argument `name`, or None."""
    if typing.get_origin(hint) is Annotated:
        kind, *rules = typing.get_args(hint)
        if problem := what_is_wrong(value, kind, name):
            return problem
        broken = next((rule for rule in rules if not rule.holds(value)), None)
        return None if broken is None else f"{name} must be {broken.says}, not {_shown(value)}"
    if not _fits(value, hint):
        return f"{name} must be {_describe(hint)}, not {_shown(value)}"
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return next(filter(None, (what_is_wrong(each, item, f"{name}[{at}]")
                                  for at, each in enumerate(value))), None)
    if _is_union(hint):
        problems = [what_is_wrong(value, option, name) for option in typing.get_args(hint)
                    if _fits(value, option)]
        return None if None in problems else problems[0]
    return None


def _fits(value, hint) -> bool:
    """Whether the value is of the type, leaving the shape of what it holds aside."""
    if typing.get_origin(hint) is Annotated:
        return _fits(value, typing.get_args(hint)[0])
    if _is_union(hint):
        return any(_fits(value, option) for option in typing.get_args(hint))
    if typing.get_origin(hint) is list:
        return isinstance(value, list)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _is_union(hint) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _describe(hint) -> str:
    if typing.get_origin(hint) is Annotated:
        return _describe(typing.get_args(hint)[0])
    if _is_union(hint):
        return " or ".join(_describe(option) for option in typing.get_args(hint))
    if typing.get_origin(hint) is list:
        return f"a list (each item {_describe(typing.get_args(hint)[0])})"
    return _NAMES.get(hint, hint.__name__)


def _shown(value) -> str:
    """The value as it came, cut short: a log line stays one line."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."
