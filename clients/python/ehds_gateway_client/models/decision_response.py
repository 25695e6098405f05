from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.application_view import ApplicationView
  from ..models.permit_view import PermitView





T = TypeVar("T", bound="DecisionResponse")



@_attrs_define
class DecisionResponse:
    """ 
        Attributes:
            application (ApplicationView): An application as it stands: its record, its deadlines now, and the steps open to
                it.
            permit (None | PermitView | Unset):
     """

    application: ApplicationView
    permit: None | PermitView | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.application_view import ApplicationView # noqa: PLC0415
        from ..models.permit_view import PermitView # noqa: PLC0415
        application = self.application.to_dict()

        permit: dict[str, Any] | None | Unset
        if isinstance(self.permit, Unset):
            permit = UNSET
        elif isinstance(self.permit, PermitView):
            permit = self.permit.to_dict()
        else:
            permit = self.permit


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "application": application,
        })
        if permit is not UNSET:
            field_dict["permit"] = permit

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.application_view import ApplicationView # noqa: PLC0415
        from ..models.permit_view import PermitView # noqa: PLC0415
        d = dict(src_dict)
        application = ApplicationView.from_dict(d.pop("application"))




        def _parse_permit(data: object) -> None | PermitView | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                permit_type_0 = PermitView.from_dict(data)



                return permit_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PermitView | Unset, data)

        permit = _parse_permit(d.pop("permit", UNSET))


        decision_response = cls(
            application=application,
            permit=permit,
        )


        decision_response.additional_properties = d
        return decision_response

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
