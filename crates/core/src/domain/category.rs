//! Art. 51(1) categories of electronic health data for secondary use.

use serde::{Deserialize, Serialize};

use super::ParseResult;

macro_rules! categories {
    ($($variant:ident = $id:literal, $letter:literal;)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum DataCategory { $($variant,)* }

        impl DataCategory {
            pub const ALL: &'static [DataCategory] = &[$(DataCategory::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(DataCategory::$variant => $id,)* }
            }

            /// The point of Art. 51(1) the category comes from.
            pub fn article_point(self) -> char {
                match self { $(DataCategory::$variant => $letter,)* }
            }
        }
    };
}

categories! {
    EhrData = "ehr_data", 'a';
    HealthDeterminants = "health_determinants", 'b';
    HealthcareSystemAggregates = "healthcare_system_aggregates", 'c';
    PathogenData = "pathogen_data", 'd';
    HealthcareAdministrative = "healthcare_administrative", 'e';
    GeneticGenomic = "genetic_genomic", 'f';
    OtherOmics = "other_omics", 'g';
    DeviceGeneratedPersonal = "device_generated_personal", 'h';
    WellnessAppData = "wellness_app_data", 'i';
    HealthProfessionalData = "health_professional_data", 'j';
    PopulationRegistry = "population_registry", 'k';
    MedicalMortalityRegistry = "medical_mortality_registry", 'l';
    ClinicalTrialStudy = "clinical_trial_study", 'm';
    DeviceOther = "device_other", 'n';
    ProductRegistry = "product_registry", 'o';
    ResearchCohortSurvey = "research_cohort_survey", 'p';
    BiobankData = "biobank_data", 'q';
}

impl DataCategory {
    pub fn parse(s: &str) -> ParseResult<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s).ok_or((
            "unknown_category",
            format!("`{s}` is not an Art. 51(1) data category"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seventeen_categories_a_to_q() {
        assert_eq!(DataCategory::ALL.len(), 17);
        let letters: String = DataCategory::ALL
            .iter()
            .map(|c| c.article_point())
            .collect();
        assert_eq!(letters, "abcdefghijklmnopq");
        for c in DataCategory::ALL {
            assert_eq!(DataCategory::parse(c.as_str()), Ok(*c));
        }
    }
}
