from enum import StrEnum

class StrategyConfigMoonName(StrEnum):
    MOON = "moon"

    def __str__(self) -> str:
        return str(self.value)
