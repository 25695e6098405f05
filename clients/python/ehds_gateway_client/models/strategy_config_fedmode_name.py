from enum import StrEnum

class StrategyConfigFedmodeName(StrEnum):
    FEDMODE = "fedmode"

    def __str__(self) -> str:
        return str(self.value)
