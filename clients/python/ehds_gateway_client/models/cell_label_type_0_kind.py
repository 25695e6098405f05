from enum import StrEnum

class CellLabelType0Kind(StrEnum):
    LEVEL = "level"

    def __str__(self) -> str:
        return str(self.value)
