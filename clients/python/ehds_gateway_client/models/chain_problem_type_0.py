from enum import StrEnum

class ChainProblemType0(StrEnum):
    HASH_MISMATCH = "hash_mismatch"

    def __str__(self) -> str:
        return str(self.value)
