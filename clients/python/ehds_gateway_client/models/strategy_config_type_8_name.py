from enum import StrEnum

class StrategyConfigType8Name(StrEnum):
    FEDEXP = "fedexp"

    def __str__(self) -> str:
        return str(self.value)
