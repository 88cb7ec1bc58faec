# BeforeValidator functions for normalised.py, imported from another module as Prime-RL's may be.
from typing import Any


def true_is_table(value: Any) -> Any:
    """True enables the section with its defaults, False disables it."""
    if value is True:
        return {}
    elif value is False:
        return None
    return value
