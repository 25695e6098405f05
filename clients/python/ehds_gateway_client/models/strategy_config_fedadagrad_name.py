from enum import StrEnum

class StrategyConfigFedadagradName(StrEnum):
    FEDADAGRAD = "fedadagrad"

    def __str__(self) -> str:
        return str(self.value)
