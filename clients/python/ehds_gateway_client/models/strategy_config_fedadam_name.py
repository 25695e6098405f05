from enum import StrEnum

class StrategyConfigFedadamName(StrEnum):
    FEDADAM = "fedadam"

    def __str__(self) -> str:
        return str(self.value)
