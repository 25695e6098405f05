from enum import StrEnum

class PermitStateType2Status(StrEnum):
    REVOKED = "revoked"

    def __str__(self) -> str:
        return str(self.value)
