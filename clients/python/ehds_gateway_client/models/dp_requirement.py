from enum import StrEnum

class DpRequirement(StrEnum):
    CLIENT = "client"
    CLIENT_OR_RECORD = "client_or_record"
    NONE_ALLOWED = "none_allowed"
    RECORD = "record"

    def __str__(self) -> str:
        return str(self.value)
