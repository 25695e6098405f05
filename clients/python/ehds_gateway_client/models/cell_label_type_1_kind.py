from enum import StrEnum

class CellLabelType1Kind(StrEnum):
    BIN = "bin"

    def __str__(self) -> str:
        return str(self.value)
