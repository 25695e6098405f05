from enum import StrEnum

class CellValueType2Kind(StrEnum):
    HISTOGRAM = "histogram"

    def __str__(self) -> str:
        return str(self.value)
