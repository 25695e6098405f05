from enum import StrEnum

class StrategyConfigPerfclName(StrEnum):
    PERFCL = "perfcl"

    def __str__(self) -> str:
        return str(self.value)
