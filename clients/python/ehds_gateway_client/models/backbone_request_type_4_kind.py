from enum import StrEnum

class BackboneRequestType4Kind(StrEnum):
    CNN = "cnn"

    def __str__(self) -> str:
        return str(self.value)
