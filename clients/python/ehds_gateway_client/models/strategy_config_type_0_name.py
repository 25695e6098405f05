from enum import StrEnum

class StrategyConfigType0Name(StrEnum):
    FEDAVG = "fedavg"

    def __str__(self) -> str:
        return str(self.value)
