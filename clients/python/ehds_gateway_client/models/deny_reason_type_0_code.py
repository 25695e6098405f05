from enum import StrEnum

class DenyReasonType0Code(StrEnum):
    PERMIT_NOT_ACTIVE = "permit_not_active"

    def __str__(self) -> str:
        return str(self.value)
