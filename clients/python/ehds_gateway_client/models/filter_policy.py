from enum import StrEnum

class FilterPolicy(StrEnum):
    AT_ISSUE = "at_issue"
    STRICT = "strict"

    def __str__(self) -> str:
        return str(self.value)
