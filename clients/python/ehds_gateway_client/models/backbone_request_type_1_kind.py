from enum import StrEnum

class BackboneRequestType1Kind(StrEnum):
    GRU = "gru"

    def __str__(self) -> str:
        return str(self.value)
