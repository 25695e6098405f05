from enum import StrEnum

class DpLevel(StrEnum):
    CLIENT = "client"
    NONE = "none"
    RECORD = "record"

    def __str__(self) -> str:
        return str(self.value)
