from enum import StrEnum

class FedMapTier(StrEnum):
    FINETUNED = "FineTuned"
    GLOBAL = "Global"
    PERSONALISED = "Personalised"

    def __str__(self) -> str:
        return str(self.value)
