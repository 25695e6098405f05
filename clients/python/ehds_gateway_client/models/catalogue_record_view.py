from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.entry_status import EntryStatus
from typing import cast
from uuid import UUID
import datetime






T = TypeVar("T", bound="CatalogueRecordView")



@_attrs_define
class CatalogueRecordView:
    """ What the API answers about a catalogue entry it changed.

        Attributes:
            id (UUID): Identifier of a dataset in the HDAB's catalogue (Art. 77).
            iri (str): The dataset's IRI in the catalogue (its HealthDCAT-AP description).
            issued (datetime.datetime):
            modified (datetime.datetime):
            publisher (str):
            revision (int):
            status (EntryStatus): Whether a dataset is in the public catalogue.
     """

    id: UUID
    iri: str
    issued: datetime.datetime
    modified: datetime.datetime
    publisher: str
    revision: int
    status: EntryStatus
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        iri = self.iri

        issued = self.issued.isoformat()

        modified = self.modified.isoformat()

        publisher = self.publisher

        revision = self.revision

        status = self.status.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "iri": iri,
            "issued": issued,
            "modified": modified,
            "publisher": publisher,
            "revision": revision,
            "status": status,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))




        iri = d.pop("iri")

        issued = datetime.datetime.fromisoformat(d.pop("issued"))




        modified = datetime.datetime.fromisoformat(d.pop("modified"))




        publisher = d.pop("publisher")

        revision = d.pop("revision")

        status = EntryStatus(d.pop("status"))




        catalogue_record_view = cls(
            id=id,
            iri=iri,
            issued=issued,
            modified=modified,
            publisher=publisher,
            revision=revision,
            status=status,
        )


        catalogue_record_view.additional_properties = d
        return catalogue_record_view

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
