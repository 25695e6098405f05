from enum import StrEnum

class Transition(StrEnum):
    ACCEPT_CONVERSION = "accept_conversion"
    ACCEPT_FEE_ESTIMATE = "accept_fee_estimate"
    ANSWER_INFORMATION = "answer_information"
    APPROVE = "approve"
    CONFIRM_COMPLETE = "confirm_complete"
    CONFIRM_GRANT = "confirm_grant"
    DECLINE_GRANT = "decline_grant"
    EXTEND = "extend"
    LAPSE = "lapse"
    PROPOSE_CONVERSION = "propose_conversion"
    PUBLISH = "publish"
    REJECT = "reject"
    REQUEST_INFORMATION = "request_information"
    ROUTE_TO_TRUSTED_HOLDER = "route_to_trusted_holder"
    SEND_FEE_ESTIMATE = "send_fee_estimate"
    SUBMIT = "submit"
    WITHDRAW = "withdraw"

    def __str__(self) -> str:
        return str(self.value)
