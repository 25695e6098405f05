from enum import StrEnum

class StrategyConfigType20Name(StrEnum):
    APFL = "apfl"

    def __str__(self) -> str:
        return str(self.value)
