from enum import StrEnum

class PermitStateType1Status(StrEnum):
    SUSPENDED = "suspended"

    def __str__(self) -> str:
        return str(self.value)
