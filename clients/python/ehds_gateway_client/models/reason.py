from enum import StrEnum

class Reason(StrEnum):
    DOMINANCE = "dominance"
    P_RATIO = "p_ratio"
    QUANTILE_IN_SPARSE_BIN = "quantile_in_sparse_bin"
    RESIDUAL_DEGREES_OF_FREEDOM = "residual_degrees_of_freedom"
    SECONDARY_SUPPRESSION = "secondary_suppression"
    SURVIVAL_AT_RISK_BELOW_THRESHOLD = "survival_at_risk_below_threshold"
    THRESHOLD_COUNT = "threshold_count"
    ZERO_COUNT = "zero_count"

    def __str__(self) -> str:
        return str(self.value)
