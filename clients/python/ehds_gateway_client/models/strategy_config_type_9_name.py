from enum import StrEnum

class StrategyConfigType9Name(StrEnum):
    QFEDAVG = "qfedavg"

    def __str__(self) -> str:
        return str(self.value)
