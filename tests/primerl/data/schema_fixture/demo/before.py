from pydantic import model_validator
from pydantic_config import BaseConfig


class RewritingConfig(BaseConfig):
    value: int = 0

    @model_validator(mode="before")
    @classmethod
    def rename(cls, data):
        return data
