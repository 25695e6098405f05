from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ProcessingRecord")



@_attrs_define
class ProcessingRecord:
    """ GDPR Art. 30(1) record of one processing activity: a permit.

        Attributes:
            categories_of_data_subjects (list[str]):
            categories_of_personal_data (list[Any]):
            controller (Any):
            erasure (Any):
            member_states (list[str]):
            optout_exception (bool):
            permit_id (str):
            purposes (list[str]):
            recipients (list[str]):
            roles (Any): Art. 74: the HDAB is controller for permit management and processor for the user in the SPE.
            security_measures (list[str]):
            status (str):
            terms_version (int):
            third_country_transfers (str):
     """

    categories_of_data_subjects: list[str]
    categories_of_personal_data: list[Any]
    controller: Any
    erasure: Any
    member_states: list[str]
    optout_exception: bool
    permit_id: str
    purposes: list[str]
    recipients: list[str]
    roles: Any
    security_measures: list[str]
    status: str
    terms_version: int
    third_country_transfers: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        categories_of_data_subjects = self.categories_of_data_subjects



        categories_of_personal_data = self.categories_of_personal_data



        controller = self.controller

        erasure = self.erasure

        member_states = self.member_states



        optout_exception = self.optout_exception

        permit_id = self.permit_id

        purposes = self.purposes



        recipients = self.recipients



        roles = self.roles

        security_measures = self.security_measures



        status = self.status

        terms_version = self.terms_version

        third_country_transfers = self.third_country_transfers


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "categories_of_data_subjects": categories_of_data_subjects,
            "categories_of_personal_data": categories_of_personal_data,
            "controller": controller,
            "erasure": erasure,
            "member_states": member_states,
            "optout_exception": optout_exception,
            "permit_id": permit_id,
            "purposes": purposes,
            "recipients": recipients,
            "roles": roles,
            "security_measures": security_measures,
            "status": status,
            "terms_version": terms_version,
            "third_country_transfers": third_country_transfers,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        categories_of_data_subjects = cast(list[str], d.pop("categories_of_data_subjects"))


        categories_of_personal_data = cast(list[Any], d.pop("categories_of_personal_data"))


        controller = d.pop("controller")

        erasure = d.pop("erasure")

        member_states = cast(list[str], d.pop("member_states"))


        optout_exception = d.pop("optout_exception")

        permit_id = d.pop("permit_id")

        purposes = cast(list[str], d.pop("purposes"))


        recipients = cast(list[str], d.pop("recipients"))


        roles = d.pop("roles")

        security_measures = cast(list[str], d.pop("security_measures"))


        status = d.pop("status")

        terms_version = d.pop("terms_version")

        third_country_transfers = d.pop("third_country_transfers")

        processing_record = cls(
            categories_of_data_subjects=categories_of_data_subjects,
            categories_of_personal_data=categories_of_personal_data,
            controller=controller,
            erasure=erasure,
            member_states=member_states,
            optout_exception=optout_exception,
            permit_id=permit_id,
            purposes=purposes,
            recipients=recipients,
            roles=roles,
            security_measures=security_measures,
            status=status,
            terms_version=terms_version,
            third_country_transfers=third_country_transfers,
        )


        processing_record.additional_properties = d
        return processing_record

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
