from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.distribution_form_title import DistributionFormTitle





T = TypeVar("T", bound="DistributionForm")



@_attrs_define
class DistributionForm:
    """ 
        Attributes:
            access_url (str): `dcat:accessURL` (`http(s)`).
            format_ (None | str | Unset): EU file type code, e.g. `CSV`.
            media_type (None | str | Unset): IANA media type, e.g. `application/fhir+json`.
            title (DistributionFormTitle | Unset):
     """

    access_url: str
    format_: None | str | Unset = UNSET
    media_type: None | str | Unset = UNSET
    title: DistributionFormTitle | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.distribution_form_title import DistributionFormTitle # noqa: PLC0415
        access_url = self.access_url

        format_: None | str | Unset
        if isinstance(self.format_, Unset):
            format_ = UNSET
        else:
            format_ = self.format_

        media_type: None | str | Unset
        if isinstance(self.media_type, Unset):
            media_type = UNSET
        else:
            media_type = self.media_type

        title: dict[str, Any] | Unset = UNSET
        if not isinstance(self.title, Unset):
            title = self.title.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "access_url": access_url,
        })
        if format_ is not UNSET:
            field_dict["format"] = format_
        if media_type is not UNSET:
            field_dict["media_type"] = media_type
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.distribution_form_title import DistributionFormTitle # noqa: PLC0415
        d = dict(src_dict)
        access_url = d.pop("access_url")

        def _parse_format_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        format_ = _parse_format_(d.pop("format", UNSET))


        def _parse_media_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        media_type = _parse_media_type(d.pop("media_type", UNSET))


        _title = d.pop("title", UNSET)
        title: DistributionFormTitle | Unset
        if isinstance(_title,  Unset):
            title = UNSET
        else:
            title = DistributionFormTitle.from_dict(_title)




        distribution_form = cls(
            access_url=access_url,
            format_=format_,
            media_type=media_type,
            title=title,
        )

        return distribution_form

