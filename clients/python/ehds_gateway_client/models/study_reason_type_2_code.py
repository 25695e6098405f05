from enum import StrEnum

class StudyReasonType2Code(StrEnum):
    SECURE_AGGREGATION_REQUIRED = "secure_aggregation_required"

    def __str__(self) -> str:
        return str(self.value)
