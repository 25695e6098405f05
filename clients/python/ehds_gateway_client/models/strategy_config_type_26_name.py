from enum import StrEnum

class StrategyConfigType26Name(StrEnum):
    SILO = "silo"

    def __str__(self) -> str:
        return str(self.value)
