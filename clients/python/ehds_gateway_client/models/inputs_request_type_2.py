from enum import StrEnum

class InputsRequestType2(StrEnum):
    SERIES = "series"

    def __str__(self) -> str:
        return str(self.value)
