from enum import StrEnum

class ChainProblemType1(StrEnum):
    BROKEN_LINK = "broken_link"

    def __str__(self) -> str:
        return str(self.value)
