from enum import StrEnum

class StrategyConfigType17Name(StrEnum):
    DITTO = "ditto"

    def __str__(self) -> str:
        return str(self.value)
