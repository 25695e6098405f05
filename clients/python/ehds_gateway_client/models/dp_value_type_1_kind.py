from enum import StrEnum

class DpValueType1Kind(StrEnum):
    MEAN = "mean"

    def __str__(self) -> str:
        return str(self.value)
