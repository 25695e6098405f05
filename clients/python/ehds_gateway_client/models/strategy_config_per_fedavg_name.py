from enum import StrEnum

class StrategyConfigPerFedavgName(StrEnum):
    PER_FEDAVG = "per_fedavg"

    def __str__(self) -> str:
        return str(self.value)
