"""Keyword arguments that a function takes on behalf of another one (private helpers).

A function that passes a set of settings through to another (``**settings``) names them in one
place only; :func:`spell_keywords` writes them back into its signature, so that ``help`` and the
API pages show every keyword with its default, and :func:`check_keywords` refuses a name outside
the set, as Python does for a misspelt keyword.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def check_keywords(where: str, given: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Raise ``TypeError`` naming the keywords of ``given`` that are not ``allowed``."""
    allowed = list(allowed)
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword argument(s) {', '.join(unknown)}; its settings are "
                        f"{', '.join(allowed)}.")


def spell_keywords(params: Iterable[inspect.Parameter]) -> Callable[[F], F]:
    """Decorator: show ``params`` (as keyword-only arguments, with their defaults and annotations)
    in place of the function's ``**settings`` in its signature."""
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]

    def decorate(func: F) -> F:
        sig = inspect.signature(func)
        kept = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        func.__signature__ = sig.replace(parameters=kept + params)
        return func

    return decorate
