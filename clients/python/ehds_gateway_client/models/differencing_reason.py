from enum import StrEnum

class DifferencingReason(StrEnum):
    NESTED_POPULATIONS = "nested_populations"
    SAME_POPULATION_CHANGED = "same_population_changed"
    SMALL_DIFFERENCE = "small_difference"

    def __str__(self) -> str:
        return str(self.value)
