from enum import StrEnum

class BudgetUnit(StrEnum):
    DATA_HOLDER = "data_holder"
    RECORD = "record"

    def __str__(self) -> str:
        return str(self.value)
