from enum import StrEnum

class ExportFormat(StrEnum):
    CSV = "csv"
    FHIR = "fhir"
    JSON = "json"
    JSONL = "jsonl"

    def __str__(self) -> str:
        return str(self.value)
