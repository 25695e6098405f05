from enum import StrEnum

class OptOutEventKind(StrEnum):
    REGISTERED = "registered"
    WITHDRAWN = "withdrawn"

    def __str__(self) -> str:
        return str(self.value)
