from enum import StrEnum

class ApplicationKind(StrEnum):
    DATA_ACCESS = "data_access"
    DATA_REQUEST = "data_request"

    def __str__(self) -> str:
        return str(self.value)
