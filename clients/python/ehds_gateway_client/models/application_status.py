from enum import StrEnum

class ApplicationStatus(StrEnum):
    APPROVED = "approved"
    REJECTED = "rejected"
    SUBMITTED = "submitted"
    WITHDRAWN = "withdrawn"

    def __str__(self) -> str:
        return str(self.value)
