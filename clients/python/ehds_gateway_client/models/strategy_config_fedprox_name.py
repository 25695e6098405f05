from enum import StrEnum

class StrategyConfigFedproxName(StrEnum):
    FEDPROX = "fedprox"

    def __str__(self) -> str:
        return str(self.value)
