from enum import StrEnum

class DenyReasonType5Code(StrEnum):
    DATA_HOLDER_NOT_PERMITTED = "data_holder_not_permitted"

    def __str__(self) -> str:
        return str(self.value)
