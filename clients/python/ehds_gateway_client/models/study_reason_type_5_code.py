from enum import StrEnum

class StudyReasonType5Code(StrEnum):
    PLANNED_ROUNDS_EXCEED_BUDGET = "planned_rounds_exceed_budget"

    def __str__(self) -> str:
        return str(self.value)
