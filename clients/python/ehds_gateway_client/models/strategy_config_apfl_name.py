from enum import StrEnum

class StrategyConfigApflName(StrEnum):
    APFL = "apfl"

    def __str__(self) -> str:
        return str(self.value)
