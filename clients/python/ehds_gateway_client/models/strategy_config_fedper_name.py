from enum import StrEnum

class StrategyConfigFedperName(StrEnum):
    FEDPER = "fedper"

    def __str__(self) -> str:
        return str(self.value)
