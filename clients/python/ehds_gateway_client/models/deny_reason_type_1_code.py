from enum import StrEnum

class DenyReasonType1Code(StrEnum):
    PERMIT_NOT_YET_VALID = "permit_not_yet_valid"

    def __str__(self) -> str:
        return str(self.value)
