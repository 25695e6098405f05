from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.deny_reason_type_0 import DenyReasonType0
  from ..models.deny_reason_type_1 import DenyReasonType1
  from ..models.deny_reason_type_2 import DenyReasonType2
  from ..models.deny_reason_type_3 import DenyReasonType3
  from ..models.deny_reason_type_4 import DenyReasonType4
  from ..models.deny_reason_type_5 import DenyReasonType5
  from ..models.deny_reason_type_6 import DenyReasonType6





T = TypeVar("T", bound="CheckOutcome")



@_attrs_define
class CheckOutcome:
    """ 
        Attributes:
            allowed (bool):
            epsilon_remaining (float):
            permit_state (str):
            reasons (list[DenyReasonType0 | DenyReasonType1 | DenyReasonType2 | DenyReasonType3 | DenyReasonType4 |
                DenyReasonType5 | DenyReasonType6]):
     """

    allowed: bool
    epsilon_remaining: float
    permit_state: str
    reasons: list[DenyReasonType0 | DenyReasonType1 | DenyReasonType2 | DenyReasonType3 | DenyReasonType4 | DenyReasonType5 | DenyReasonType6]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.deny_reason_type_0 import DenyReasonType0 # noqa: PLC0415
        from ..models.deny_reason_type_1 import DenyReasonType1 # noqa: PLC0415
        from ..models.deny_reason_type_2 import DenyReasonType2 # noqa: PLC0415
        from ..models.deny_reason_type_3 import DenyReasonType3 # noqa: PLC0415
        from ..models.deny_reason_type_4 import DenyReasonType4 # noqa: PLC0415
        from ..models.deny_reason_type_5 import DenyReasonType5 # noqa: PLC0415
        from ..models.deny_reason_type_6 import DenyReasonType6 # noqa: PLC0415
        allowed = self.allowed

        epsilon_remaining = self.epsilon_remaining

        permit_state = self.permit_state

        reasons = []
        for reasons_item_data in self.reasons:
            reasons_item: dict[str, Any]
            if isinstance(reasons_item_data, DenyReasonType0):
                reasons_item = reasons_item_data.to_dict()
            elif isinstance(reasons_item_data, DenyReasonType1):
                reasons_item = reasons_item_data.to_dict()
            elif isinstance(reasons_item_data, DenyReasonType2):
                reasons_item = reasons_item_data.to_dict()
            elif isinstance(reasons_item_data, DenyReasonType3):
                reasons_item = reasons_item_data.to_dict()
            elif isinstance(reasons_item_data, DenyReasonType4):
                reasons_item = reasons_item_data.to_dict()
            elif isinstance(reasons_item_data, DenyReasonType5):
                reasons_item = reasons_item_data.to_dict()
            else:
                reasons_item = reasons_item_data.to_dict()

            reasons.append(reasons_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "allowed": allowed,
            "epsilon_remaining": epsilon_remaining,
            "permit_state": permit_state,
            "reasons": reasons,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.deny_reason_type_0 import DenyReasonType0 # noqa: PLC0415
        from ..models.deny_reason_type_1 import DenyReasonType1 # noqa: PLC0415
        from ..models.deny_reason_type_2 import DenyReasonType2 # noqa: PLC0415
        from ..models.deny_reason_type_3 import DenyReasonType3 # noqa: PLC0415
        from ..models.deny_reason_type_4 import DenyReasonType4 # noqa: PLC0415
        from ..models.deny_reason_type_5 import DenyReasonType5 # noqa: PLC0415
        from ..models.deny_reason_type_6 import DenyReasonType6 # noqa: PLC0415
        d = dict(src_dict)
        allowed = d.pop("allowed")

        epsilon_remaining = d.pop("epsilon_remaining")

        permit_state = d.pop("permit_state")

        reasons = []
        _reasons = d.pop("reasons")
        for reasons_item_data in (_reasons):
            def _parse_reasons_item(data: object) -> DenyReasonType0 | DenyReasonType1 | DenyReasonType2 | DenyReasonType3 | DenyReasonType4 | DenyReasonType5 | DenyReasonType6:
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_deny_reason_type_0 = DenyReasonType0.from_dict(data)



                    return componentsschemas_deny_reason_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_deny_reason_type_1 = DenyReasonType1.from_dict(data)



                    return componentsschemas_deny_reason_type_1
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_deny_reason_type_2 = DenyReasonType2.from_dict(data)



                    return componentsschemas_deny_reason_type_2
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_deny_reason_type_3 = DenyReasonType3.from_dict(data)



                    return componentsschemas_deny_reason_type_3
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_deny_reason_type_4 = DenyReasonType4.from_dict(data)



                    return componentsschemas_deny_reason_type_4
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_deny_reason_type_5 = DenyReasonType5.from_dict(data)



                    return componentsschemas_deny_reason_type_5
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_deny_reason_type_6 = DenyReasonType6.from_dict(data)



                return componentsschemas_deny_reason_type_6

            reasons_item = _parse_reasons_item(reasons_item_data)

            reasons.append(reasons_item)


        check_outcome = cls(
            allowed=allowed,
            epsilon_remaining=epsilon_remaining,
            permit_state=permit_state,
            reasons=reasons,
        )


        check_outcome.additional_properties = d
        return check_outcome

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
