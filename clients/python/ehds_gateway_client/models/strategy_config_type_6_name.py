from enum import StrEnum

class StrategyConfigType6Name(StrEnum):
    FEDNOVA = "fednova"

    def __str__(self) -> str:
        return str(self.value)
