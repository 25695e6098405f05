from enum import StrEnum

class ModelRelease(StrEnum):
    BEST_VALIDATION = "best_validation"
    LAST = "last"

    def __str__(self) -> str:
        return str(self.value)
