from enum import StrEnum

class StrategyConfigType15Name(StrEnum):
    FEDDECORR = "feddecorr"

    def __str__(self) -> str:
        return str(self.value)
