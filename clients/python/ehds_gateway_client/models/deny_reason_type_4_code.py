from enum import StrEnum

class DenyReasonType4Code(StrEnum):
    CATEGORY_NOT_PERMITTED = "category_not_permitted"

    def __str__(self) -> str:
        return str(self.value)
