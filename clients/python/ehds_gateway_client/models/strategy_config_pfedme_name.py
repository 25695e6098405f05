from enum import StrEnum

class StrategyConfigPfedmeName(StrEnum):
    PFEDME = "pfedme"

    def __str__(self) -> str:
        return str(self.value)
