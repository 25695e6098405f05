from enum import StrEnum

class StudyTaskType0(StrEnum):
    BINARY = "binary"

    def __str__(self) -> str:
        return str(self.value)
