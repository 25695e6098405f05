from enum import StrEnum

class UserKind(StrEnum):
    MICROENTERPRISE = "microenterprise"
    PUBLIC_BODY = "public_body"
    UNIVERSITY_RESEARCHER = "university_researcher"

    def __str__(self) -> str:
        return str(self.value)
