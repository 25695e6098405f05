from enum import StrEnum

class StrategyConfigFedyogiName(StrEnum):
    FEDYOGI = "fedyogi"

    def __str__(self) -> str:
        return str(self.value)
