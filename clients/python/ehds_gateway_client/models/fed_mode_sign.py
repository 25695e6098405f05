from enum import StrEnum

class FedModeSign(StrEnum):
    EXTRAPOLATE = "Extrapolate"
    SHRINK = "Shrink"

    def __str__(self) -> str:
        return str(self.value)
