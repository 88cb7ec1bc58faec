# A synthetic config module for tests/primerl/test_schema.cpp: one field of each kind
# tools/extract_schema.py reads (Prime-RL's own classes are the real input).
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Optional, TypeAlias

from pydantic import AliasChoices, Field, model_validator
from pydantic_config import BaseConfig

from demo.shared import AlphaConfig, BetaConfig, Mode, Tagged


class Inner(BaseConfig):
    depth: int = Field(3, ge=1, le=10)


class Base(BaseConfig):
    inherited: bool = True
    overridden: int = 1


class DemoConfig(Base):
    kind_name: ClassVar[str] = "demo"
    _private: int = 0
    flag: bool = False
    count: int = Field(2, ge=0)
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5
    name: str = "demo"
    out: Path = Path("out")
    tags: list[str] = []
    table: dict[str, int] = {}
    free: dict[str, Any] = Field(default_factory=dict)
    inner: Inner = Inner()
    maybe: Optional[Inner] = None
    either: int | Literal["auto"] = "auto"
    mode: Mode = "fast"
    choice: Tagged = AlphaConfig()
    factory_choice: Tagged = Field(default_factory=BetaConfig)
    picked: Tagged | None = None
    renamed: int = Field(1, validation_alias=AliasChoices("renamed", "old_name"))
    required_thing: str
    also_required: int = Field(...)
    overridden: int = 2

    @model_validator(mode="after")
    def check_count(self):
        if self.count > 5:
            raise ValueError("count must be at most 5")
        return self
