from enum import StrEnum

class ChainProblemType3(StrEnum):
    NON_CANONICAL_TIMESTAMP = "non_canonical_timestamp"

    def __str__(self) -> str:
        return str(self.value)
