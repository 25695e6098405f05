from enum import StrEnum

class Purpose(StrEnum):
    CARE_IMPROVEMENT = "care_improvement"
    EDUCATION_TEACHING = "education_teaching"
    OFFICIAL_STATISTICS = "official_statistics"
    POLICY_REGULATORY = "policy_regulatory"
    PUBLIC_OCCUPATIONAL_HEALTH = "public_occupational_health"
    SCIENTIFIC_RESEARCH = "scientific_research"

    def __str__(self) -> str:
        return str(self.value)
