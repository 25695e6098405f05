from enum import StrEnum

class StrategyConfigFeddecorrName(StrEnum):
    FEDDECORR = "feddecorr"

    def __str__(self) -> str:
        return str(self.value)
