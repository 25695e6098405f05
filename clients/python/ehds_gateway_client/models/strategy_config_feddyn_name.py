from enum import StrEnum

class StrategyConfigFeddynName(StrEnum):
    FEDDYN = "feddyn"

    def __str__(self) -> str:
        return str(self.value)
