from enum import StrEnum

class StrategyConfigSiloName(StrEnum):
    SILO = "silo"

    def __str__(self) -> str:
        return str(self.value)
