from enum import StrEnum

class CellValueType4Kind(StrEnum):
    SURVIVAL = "survival"

    def __str__(self) -> str:
        return str(self.value)
