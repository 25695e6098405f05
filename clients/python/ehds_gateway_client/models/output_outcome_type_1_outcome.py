from enum import StrEnum

class OutputOutcomeType1Outcome(StrEnum):
    SUPPRESSED = "suppressed"

    def __str__(self) -> str:
        return str(self.value)
