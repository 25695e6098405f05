from enum import StrEnum

class OutputOutcomeType0Outcome(StrEnum):
    RELEASED = "released"

    def __str__(self) -> str:
        return str(self.value)
