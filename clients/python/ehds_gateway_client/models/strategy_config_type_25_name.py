from enum import StrEnum

class StrategyConfigType25Name(StrEnum):
    FEDMAP = "fedmap"

    def __str__(self) -> str:
        return str(self.value)
