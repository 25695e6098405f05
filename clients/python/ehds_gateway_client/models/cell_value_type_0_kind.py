from enum import StrEnum

class CellValueType0Kind(StrEnum):
    COUNT = "count"

    def __str__(self) -> str:
        return str(self.value)
