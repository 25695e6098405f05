from enum import StrEnum

class AggregationType3Rule(StrEnum):
    MEDIAN = "median"

    def __str__(self) -> str:
        return str(self.value)
