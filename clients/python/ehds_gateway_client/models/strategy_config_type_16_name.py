from enum import StrEnum

class StrategyConfigType16Name(StrEnum):
    MOON = "moon"

    def __str__(self) -> str:
        return str(self.value)
