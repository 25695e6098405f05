from enum import StrEnum

class StrategyConfigType19Name(StrEnum):
    FENDA_FL = "fenda_fl"

    def __str__(self) -> str:
        return str(self.value)
