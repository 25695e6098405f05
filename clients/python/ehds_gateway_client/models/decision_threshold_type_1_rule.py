from enum import StrEnum

class DecisionThresholdType1Rule(StrEnum):
    MAX_F1 = "max_f1"

    def __str__(self) -> str:
        return str(self.value)
