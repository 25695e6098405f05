from enum import StrEnum

class AggregationType2Rule(StrEnum):
    MULTI_KRUM = "multi_krum"

    def __str__(self) -> str:
        return str(self.value)
