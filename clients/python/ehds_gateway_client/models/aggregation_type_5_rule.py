from enum import StrEnum

class AggregationType5Rule(StrEnum):
    BULYAN = "bulyan"

    def __str__(self) -> str:
        return str(self.value)
