from enum import StrEnum

class ApplicationStatus(StrEnum):
    APPROVED = "approved"
    ASSESSING = "assessing"
    AWAITING_CONFIRMATION = "awaiting_confirmation"
    DRAFT = "draft"
    FEE_PENDING = "fee_pending"
    INCOMPLETE = "incomplete"
    LAPSED = "lapsed"
    PARTIALLY_APPROVED = "partially_approved"
    REJECTED = "rejected"
    SUBMITTED = "submitted"
    WITHDRAWN = "withdrawn"

    def __str__(self) -> str:
        return str(self.value)
