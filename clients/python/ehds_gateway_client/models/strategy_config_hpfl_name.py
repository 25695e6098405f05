from enum import StrEnum

class StrategyConfigHpflName(StrEnum):
    HPFL = "hpfl"

    def __str__(self) -> str:
        return str(self.value)
