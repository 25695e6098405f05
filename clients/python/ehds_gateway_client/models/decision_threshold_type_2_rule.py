from enum import StrEnum

class DecisionThresholdType2Rule(StrEnum):
    YOUDEN_J = "youden_j"

    def __str__(self) -> str:
        return str(self.value)
