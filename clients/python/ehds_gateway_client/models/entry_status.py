from enum import StrEnum

class EntryStatus(StrEnum):
    PUBLISHED = "published"
    WITHDRAWN = "withdrawn"

    def __str__(self) -> str:
        return str(self.value)
