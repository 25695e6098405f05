from enum import StrEnum

class StrategyConfigType2Name(StrEnum):
    SCAFFOLD = "scaffold"

    def __str__(self) -> str:
        return str(self.value)
