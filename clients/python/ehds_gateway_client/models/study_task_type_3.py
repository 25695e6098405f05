from enum import StrEnum

class StudyTaskType3(StrEnum):
    SURVIVAL = "survival"

    def __str__(self) -> str:
        return str(self.value)
