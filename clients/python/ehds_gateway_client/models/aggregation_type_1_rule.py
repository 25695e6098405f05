from enum import StrEnum

class AggregationType1Rule(StrEnum):
    KRUM = "krum"

    def __str__(self) -> str:
        return str(self.value)
