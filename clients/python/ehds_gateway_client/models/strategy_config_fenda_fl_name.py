from enum import StrEnum

class StrategyConfigFendaFlName(StrEnum):
    FENDA_FL = "fenda_fl"

    def __str__(self) -> str:
        return str(self.value)
