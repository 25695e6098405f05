from enum import StrEnum

class RunStatus(StrEnum):
    COMPUTING = "computing"
    FAILED = "failed"
    RELEASED = "released"
    UNDER_REVIEW = "under_review"
    WITHHELD = "withheld"

    def __str__(self) -> str:
        return str(self.value)
