from enum import StrEnum

class AggregationType0Rule(StrEnum):
    MEAN = "mean"

    def __str__(self) -> str:
        return str(self.value)
