from enum import StrEnum

class StudyStatus(StrEnum):
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    FAILED = "failed"
    RUNNING = "running"
    STOPPED = "stopped"
    SUSPENDED = "suspended"

    def __str__(self) -> str:
        return str(self.value)
