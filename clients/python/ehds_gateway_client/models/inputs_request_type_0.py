from enum import StrEnum

class InputsRequestType0(StrEnum):
    ALL = "all"

    def __str__(self) -> str:
        return str(self.value)
