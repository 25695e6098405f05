from enum import StrEnum

class StrategyConfigType1Name(StrEnum):
    FEDPROX = "fedprox"

    def __str__(self) -> str:
        return str(self.value)
