from enum import StrEnum

class StrategyConfigScaffoldName(StrEnum):
    SCAFFOLD = "scaffold"

    def __str__(self) -> str:
        return str(self.value)
