from enum import StrEnum

class ResearchFlag(StrEnum):
    ALGORITHM_TRAINING = "algorithm_training"
    IMPORTANT_PUBLIC_INTEREST = "important_public_interest"
    PRODUCT_INNOVATION = "product_innovation"

    def __str__(self) -> str:
        return str(self.value)
