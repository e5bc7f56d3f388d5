"""What the roles' output validators share: a set of drafts checked against the document, a verdict's reasons.

A validator that finds problems raises the `ModelRetry` its deps build (`deps.retry`: the reason is kept for the
error the backend raises once the repairs are spent). A set's validator (`set_validator`: the MCQ writer's, the
open writer's) numbers each item's problems and, on the last try, keeps the items that passed, when any did,
rather than failing the whole call; a verdict's (`reasons_given`: the two verifiers') wants a reason for every
failed criterion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from pydantic_ai import RunContext

__all__ = ["reasons_given", "set_validator"]

_S = TypeVar("_S")


class _Slotted(Protocol):
    @property
    def slot(self) -> str: ...


_T = TypeVar("_T", bound=_Slotted)


class _Verdict(Protocol):
    @property
    def reasons(self) -> Mapping[str, str]: ...

    def criteria(self) -> dict[str, bool]: ...


_V = TypeVar("_V", bound=_Verdict)


def _screened(items: Sequence[_T], check: Callable[[_T], list[str]]) -> tuple[list[str], list[_T]]:
    """The problems of `items` (each item's `check`, and a slot repeating an earlier good item's), numbered from 1,
    and the items without any."""
    problems: list[str] = []
    good: list[_T] = []
    for i, item in enumerate(items):
        issues = check(item)
        if any(g.slot == item.slot for g in good):
            issues.append(f"slot {item.slot!r} repeats an earlier question's slot")
        if issues:
            problems.append(f"question {i + 1}: " + ", ".join(issues))
        else:
            good.append(item)
    return problems, good


def set_validator(
    *, items: Callable[[_S], Sequence[_T]], check: Callable[[_T, str], list[str]], rebuild: Callable[[list[_T]], _S],
) -> Callable[[RunContext[Any], _S], _S]:
    """The validator of a set of drafts (`items` of the output), each `check`ed against the document (`deps.document`):
    the output when nothing is wrong; on the last try the set of the good items (`rebuild`), when any; else the model
    is sent back with the problems."""

    def validate(ctx: RunContext[Any], out: _S) -> _S:
        problems, good = _screened(items(out), lambda item: check(item, ctx.deps.document))
        if not problems:
            return out
        if good and ctx.retry >= ctx.max_retries:
            return rebuild(good)  # last try: keep the items that pass
        raise ctx.deps.retry(ctx, problems)

    return validate


def reasons_given(ctx: RunContext[Any], out: _V) -> _V:
    """A verdict whose every failed criterion has a reason; else the model is sent back for them."""
    missing = [c for c, ok in out.criteria().items() if not ok and not out.reasons.get(c)]
    if missing:
        raise ctx.deps.retry(ctx, [f"give a reason for each failed criterion: {missing}"])
    return out
