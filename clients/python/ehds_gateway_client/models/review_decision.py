from enum import StrEnum

class ReviewDecision(StrEnum):
    RELEASE = "release"
    WITHHOLD = "withhold"

    def __str__(self) -> str:
        return str(self.value)
