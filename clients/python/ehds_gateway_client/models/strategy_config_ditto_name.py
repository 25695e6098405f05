from enum import StrEnum

class StrategyConfigDittoName(StrEnum):
    DITTO = "ditto"

    def __str__(self) -> str:
        return str(self.value)
