from typing import Annotated, Literal, TypeAlias

from pydantic import Field
from pydantic_config import BaseConfig

Mode: TypeAlias = Literal["fast", "slow"]


class AlphaConfig(BaseConfig):
    type: Literal["alpha"] = "alpha"
    alpha: float = Field(0.5, gt=0, allow_inf_nan=False)


class BetaConfig(BaseConfig):
    type: Literal["beta"] = "beta"
    beta: list[int] = Field(default_factory=list, min_length=1)


Tagged: TypeAlias = Annotated[AlphaConfig | BetaConfig, Field(discriminator="type")]
