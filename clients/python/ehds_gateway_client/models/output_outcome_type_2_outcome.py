from enum import StrEnum

class OutputOutcomeType2Outcome(StrEnum):
    REVIEW = "review"

    def __str__(self) -> str:
        return str(self.value)
