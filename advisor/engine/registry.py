"""The registry of deciders: the named functions behind the rules.

A rule file names its function in `decide`; the function registers itself here with
`@decider(ParamsModel)`. Rule functions live one per module in `advisor.engine.rules` (named
after the rule id, `dir-block-size` -> `dir_block_size.py`); importing that package registers
every one of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from advisor.engine.context import Context, Outcome
from advisor.models.base import Model

P = TypeVar("P", bound=BaseModel)
Decider = Callable[[Context, Any], Outcome]

#: name -> (function, parameter model)
DECIDERS: dict[str, tuple[Decider, type[BaseModel]]] = {}


def decider(params: type[P]) -> Callable[[Callable[[Context, P], Outcome]],
                                         Callable[[Context, P], Outcome]]:
    """Register the decorated function under its own name, with `params` as its parameters."""
    def register(fn: Callable[[Context, P], Outcome]) -> Callable[[Context, P], Outcome]:
        if fn.__name__ in DECIDERS and DECIDERS[fn.__name__][0] is not fn:
            raise RuntimeError(f"two deciders named {fn.__name__}")
        DECIDERS[fn.__name__] = (fn, params)
        return fn
    return register


class NoParams(Model):
    """This function takes no parameters."""


def validate_params(name: str, params: dict[str, Any]) -> BaseModel:
    """The rule's params as its decider's model (ValueError with the reason)."""
    _, model = DECIDERS[name]
    return model.model_validate(params)
