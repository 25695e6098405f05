from enum import StrEnum

class DpValueType0Kind(StrEnum):
    COUNT = "count"

    def __str__(self) -> str:
        return str(self.value)
