from enum import StrEnum

class StrategyConfigType10Name(StrEnum):
    FEDMODE = "fedmode"

    def __str__(self) -> str:
        return str(self.value)
