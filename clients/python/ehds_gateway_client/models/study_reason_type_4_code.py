from enum import StrEnum

class StudyReasonType4Code(StrEnum):
    BUDGET_TOO_SMALL_FOR_ONE_ROUND = "budget_too_small_for_one_round"

    def __str__(self) -> str:
        return str(self.value)
