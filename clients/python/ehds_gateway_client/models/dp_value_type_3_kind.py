from enum import StrEnum

class DpValueType3Kind(StrEnum):
    QUANTILES = "quantiles"

    def __str__(self) -> str:
        return str(self.value)
