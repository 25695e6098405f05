from enum import StrEnum

class BackboneRequestType3Kind(StrEnum):
    FUSION = "fusion"

    def __str__(self) -> str:
        return str(self.value)
