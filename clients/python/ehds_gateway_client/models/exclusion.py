from enum import StrEnum

class Exclusion(StrEnum):
    BEFORE_TIME_GRID = "before_time_grid"
    INVALID_EVENT = "invalid_event"
    MISSING_GROUP = "missing_group"
    MISSING_VALUE = "missing_value"
    OUTSIDE_GROUP_BINS = "outside_group_bins"
    UNDECLARED_LEVEL = "undeclared_level"

    def __str__(self) -> str:
        return str(self.value)
