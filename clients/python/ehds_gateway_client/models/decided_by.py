from enum import StrEnum

class DecidedBy(StrEnum):
    NODE = "node"
    TAGS = "tags"

    def __str__(self) -> str:
        return str(self.value)
