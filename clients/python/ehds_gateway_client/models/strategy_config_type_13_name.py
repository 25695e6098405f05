from enum import StrEnum

class StrategyConfigType13Name(StrEnum):
    FEDSPEED = "fedspeed"

    def __str__(self) -> str:
        return str(self.value)
