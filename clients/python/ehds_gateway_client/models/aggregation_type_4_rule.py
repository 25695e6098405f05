from enum import StrEnum

class AggregationType4Rule(StrEnum):
    TRIMMED_MEAN = "trimmed_mean"

    def __str__(self) -> str:
        return str(self.value)
