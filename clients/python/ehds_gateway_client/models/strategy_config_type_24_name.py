from enum import StrEnum

class StrategyConfigType24Name(StrEnum):
    PFEDME = "pfedme"

    def __str__(self) -> str:
        return str(self.value)
