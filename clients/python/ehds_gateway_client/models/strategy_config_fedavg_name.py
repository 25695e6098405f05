from enum import StrEnum

class StrategyConfigFedavgName(StrEnum):
    FEDAVG = "fedavg"

    def __str__(self) -> str:
        return str(self.value)
