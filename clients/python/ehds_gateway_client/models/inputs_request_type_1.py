from enum import StrEnum

class InputsRequestType1(StrEnum):
    STATIC = "static"

    def __str__(self) -> str:
        return str(self.value)
