from enum import StrEnum

class BackboneRequestType2Kind(StrEnum):
    LSTM = "lstm"

    def __str__(self) -> str:
        return str(self.value)
