from enum import StrEnum

class StrategyConfigType14Name(StrEnum):
    FEDLC = "fedlc"

    def __str__(self) -> str:
        return str(self.value)
