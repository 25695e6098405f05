from enum import StrEnum

class StrategyConfigFedlcName(StrEnum):
    FEDLC = "fedlc"

    def __str__(self) -> str:
        return str(self.value)
