from enum import StrEnum

class StrategyConfigFedexpName(StrEnum):
    FEDEXP = "fedexp"

    def __str__(self) -> str:
        return str(self.value)
