from enum import StrEnum

class DataCategory(StrEnum):
    BIOBANK_DATA = "biobank_data"
    CLINICAL_TRIAL_STUDY = "clinical_trial_study"
    DEVICE_GENERATED_PERSONAL = "device_generated_personal"
    DEVICE_OTHER = "device_other"
    EHR_DATA = "ehr_data"
    GENETIC_GENOMIC = "genetic_genomic"
    HEALTHCARE_ADMINISTRATIVE = "healthcare_administrative"
    HEALTHCARE_SYSTEM_AGGREGATES = "healthcare_system_aggregates"
    HEALTH_DETERMINANTS = "health_determinants"
    HEALTH_PROFESSIONAL_DATA = "health_professional_data"
    MEDICAL_MORTALITY_REGISTRY = "medical_mortality_registry"
    OTHER_OMICS = "other_omics"
    PATHOGEN_DATA = "pathogen_data"
    POPULATION_REGISTRY = "population_registry"
    PRODUCT_REGISTRY = "product_registry"
    RESEARCH_COHORT_SURVEY = "research_cohort_survey"
    WELLNESS_APP_DATA = "wellness_app_data"

    def __str__(self) -> str:
        return str(self.value)
