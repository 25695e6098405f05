from enum import StrEnum

class StrategyConfigFedsamName(StrEnum):
    FEDSAM = "fedsam"

    def __str__(self) -> str:
        return str(self.value)
