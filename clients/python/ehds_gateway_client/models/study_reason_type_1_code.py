from enum import StrEnum

class StudyReasonType1Code(StrEnum):
    DP_LEVEL_NOT_PERMITTED = "dp_level_not_permitted"

    def __str__(self) -> str:
        return str(self.value)
