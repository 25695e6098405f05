from enum import StrEnum

class StrategyConfigFednovaName(StrEnum):
    FEDNOVA = "fednova"

    def __str__(self) -> str:
        return str(self.value)
