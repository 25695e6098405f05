from enum import StrEnum

class WarningCode(StrEnum):
    CONSTANT_FEATURE = "constant_feature"
    EMPTY_PART = "empty_part"
    IGNORED_MATCHES = "ignored_matches"
    PARTLY_TAGGED = "partly_tagged"
    SINGLE_CLASS = "single_class"
    SMALL_CLASS = "small_class"
    UNIT_DISPLAY_TEXT = "unit_display_text"

    def __str__(self) -> str:
        return str(self.value)
