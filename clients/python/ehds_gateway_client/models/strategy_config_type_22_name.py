from enum import StrEnum

class StrategyConfigType22Name(StrEnum):
    HPFL = "hpfl"

    def __str__(self) -> str:
        return str(self.value)
