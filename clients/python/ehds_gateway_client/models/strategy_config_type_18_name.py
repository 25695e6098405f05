from enum import StrEnum

class StrategyConfigType18Name(StrEnum):
    FEDPER = "fedper"

    def __str__(self) -> str:
        return str(self.value)
