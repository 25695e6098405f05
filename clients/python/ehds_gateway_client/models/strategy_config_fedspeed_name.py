from enum import StrEnum

class StrategyConfigFedspeedName(StrEnum):
    FEDSPEED = "fedspeed"

    def __str__(self) -> str:
        return str(self.value)
