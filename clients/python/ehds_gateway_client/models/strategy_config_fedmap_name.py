from enum import StrEnum

class StrategyConfigFedmapName(StrEnum):
    FEDMAP = "fedmap"

    def __str__(self) -> str:
        return str(self.value)
