from enum import StrEnum

class StrategyConfigType21Name(StrEnum):
    PERFCL = "perfcl"

    def __str__(self) -> str:
        return str(self.value)
