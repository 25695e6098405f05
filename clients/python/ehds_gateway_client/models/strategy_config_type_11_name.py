from enum import StrEnum

class StrategyConfigType11Name(StrEnum):
    FEDSAM = "fedsam"

    def __str__(self) -> str:
        return str(self.value)
