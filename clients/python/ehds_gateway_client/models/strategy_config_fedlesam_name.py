from enum import StrEnum

class StrategyConfigFedlesamName(StrEnum):
    FEDLESAM = "fedlesam"

    def __str__(self) -> str:
        return str(self.value)
