from enum import StrEnum

class DenyReasonType6Code(StrEnum):
    BUDGET_EXCEEDED = "budget_exceeded"

    def __str__(self) -> str:
        return str(self.value)
