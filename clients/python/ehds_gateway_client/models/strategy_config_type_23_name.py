from enum import StrEnum

class StrategyConfigType23Name(StrEnum):
    PER_FEDAVG = "per_fedavg"

    def __str__(self) -> str:
        return str(self.value)
