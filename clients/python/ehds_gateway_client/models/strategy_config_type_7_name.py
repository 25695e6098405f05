from enum import StrEnum

class StrategyConfigType7Name(StrEnum):
    FEDDYN = "feddyn"

    def __str__(self) -> str:
        return str(self.value)
