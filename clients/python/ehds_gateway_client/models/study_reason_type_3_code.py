from enum import StrEnum

class StudyReasonType3Code(StrEnum):
    PERMIT_FOR_STATISTICS_ONLY = "permit_for_statistics_only"

    def __str__(self) -> str:
        return str(self.value)
