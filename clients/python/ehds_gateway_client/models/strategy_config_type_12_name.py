from enum import StrEnum

class StrategyConfigType12Name(StrEnum):
    FEDLESAM = "fedlesam"

    def __str__(self) -> str:
        return str(self.value)
