from enum import StrEnum

class RoundPhase(StrEnum):
    AGGREGATED = "aggregated"
    COLLECTING = "collecting"
    DISCARDED = "discarded"
    FAILED = "failed"

    def __str__(self) -> str:
        return str(self.value)
