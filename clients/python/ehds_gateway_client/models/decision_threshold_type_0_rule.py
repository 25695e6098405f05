from enum import StrEnum

class DecisionThresholdType0Rule(StrEnum):
    FIXED = "fixed"

    def __str__(self) -> str:
        return str(self.value)
