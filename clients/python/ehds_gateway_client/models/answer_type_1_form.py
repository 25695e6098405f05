from enum import StrEnum

class AnswerType1Form(StrEnum):
    NOISY = "noisy"

    def __str__(self) -> str:
        return str(self.value)
