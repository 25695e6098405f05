from enum import StrEnum

class BackboneRequestType0Kind(StrEnum):
    MLP = "mlp"

    def __str__(self) -> str:
        return str(self.value)
