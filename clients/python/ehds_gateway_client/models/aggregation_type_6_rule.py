from enum import StrEnum

class AggregationType6Rule(StrEnum):
    FLTRUST = "fltrust"

    def __str__(self) -> str:
        return str(self.value)
