from enum import StrEnum

class StrategyConfigQfedavgName(StrEnum):
    QFEDAVG = "qfedavg"

    def __str__(self) -> str:
        return str(self.value)
