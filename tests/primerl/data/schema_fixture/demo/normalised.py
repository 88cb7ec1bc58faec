# BeforeValidator normalisations for tests/primerl/test_schema.cpp: the ones the extractor reads
# (true/false mapped to a table or None) and the ones it must leave untyped with a warning.
from typing import Annotated, Any

from pydantic import BeforeValidator, WrapValidator
from pydantic_config import BaseConfig

from demo.normalisers import true_is_table


class OffloadConfig(BaseConfig):
    pin: bool = True


class NeedsPathConfig(BaseConfig):
    path: str


def _guess(value: Any) -> Any:
    if isinstance(value, bool):
        return {} if value else None
    return value


def _strict(value: Any) -> Any:
    if value is True:
        return {}
    raise ValueError("only true")


Offload = Annotated[OffloadConfig | None, BeforeValidator(true_is_table)]


class NormalisedConfig(BaseConfig):
    offload: Offload = None
    by_lambda: Annotated[
        OffloadConfig | None,
        BeforeValidator(lambda v: {} if v is True else None if v is False else v),
    ] = None
    # {} lacks the required `path`: true is refused, false still means None
    needs_path: Annotated[NeedsPathConfig | None, BeforeValidator(true_is_table)] = None
    only_true: Annotated[OffloadConfig, BeforeValidator(_strict)] = OffloadConfig()
    guessed: Annotated[OffloadConfig | None, BeforeValidator(_guess)] = None
    wrapped: Annotated[int, WrapValidator(lambda v, handler: handler(v))] = 0
