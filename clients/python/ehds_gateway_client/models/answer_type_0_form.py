from enum import StrEnum

class AnswerType0Form(StrEnum):
    CHECKED = "checked"

    def __str__(self) -> str:
        return str(self.value)
