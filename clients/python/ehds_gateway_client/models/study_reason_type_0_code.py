from enum import StrEnum

class StudyReasonType0Code(StrEnum):
    DP_LEVEL_WEAKER_THAN_PERMIT_UNIT = "dp_level_weaker_than_permit_unit"

    def __str__(self) -> str:
        return str(self.value)
