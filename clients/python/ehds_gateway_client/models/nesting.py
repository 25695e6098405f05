from enum import StrEnum

class Nesting(StrEnum):
    EARLIER_CONTAINS_NEW = "earlier_contains_new"
    NEW_CONTAINS_EARLIER = "new_contains_earlier"
    SAME = "same"

    def __str__(self) -> str:
        return str(self.value)
