from enum import StrEnum

class DenyReasonType3Code(StrEnum):
    PURPOSE_NOT_PERMITTED = "purpose_not_permitted"

    def __str__(self) -> str:
        return str(self.value)
