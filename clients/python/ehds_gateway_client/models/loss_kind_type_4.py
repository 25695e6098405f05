from enum import StrEnum

class LossKindType4(StrEnum):
    COX = "Cox"

    def __str__(self) -> str:
        return str(self.value)
