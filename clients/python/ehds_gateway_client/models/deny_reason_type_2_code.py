from enum import StrEnum

class DenyReasonType2Code(StrEnum):
    PERMIT_EXPIRED = "permit_expired"

    def __str__(self) -> str:
        return str(self.value)
