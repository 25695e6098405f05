from enum import StrEnum

class TaskKind(StrEnum):
    EVALUATE = "evaluate"
    FIT = "fit"

    def __str__(self) -> str:
        return str(self.value)
