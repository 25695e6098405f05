from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="SiteContributionView")



@_attrs_define
class SiteContributionView:
    """ One holder's part in a round as shown: counts below the small-cell threshold are `null`,
    and so is the training loss where it rests on such a count or was not privatised.

        Attributes:
            contributed (bool): Whether the update went into the aggregate (false: missed the deadline).
            data_holder (str): An organisation: an applicant's organisation or a data holder. Matches the organisation claim
                of the caller's token.
            excluded_subjects (int | None | Unset): Subjects removed by the opt-out filter before training.
            samples (int | None | Unset):
            train_loss (float | None | Unset): Only for studies without formal DP (under DP it is not privatised).
     """

    contributed: bool
    data_holder: str
    excluded_subjects: int | None | Unset = UNSET
    samples: int | None | Unset = UNSET
    train_loss: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        contributed = self.contributed

        data_holder = self.data_holder

        excluded_subjects: int | None | Unset
        if isinstance(self.excluded_subjects, Unset):
            excluded_subjects = UNSET
        else:
            excluded_subjects = self.excluded_subjects

        samples: int | None | Unset
        if isinstance(self.samples, Unset):
            samples = UNSET
        else:
            samples = self.samples

        train_loss: float | None | Unset
        if isinstance(self.train_loss, Unset):
            train_loss = UNSET
        else:
            train_loss = self.train_loss


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "contributed": contributed,
            "data_holder": data_holder,
        })
        if excluded_subjects is not UNSET:
            field_dict["excluded_subjects"] = excluded_subjects
        if samples is not UNSET:
            field_dict["samples"] = samples
        if train_loss is not UNSET:
            field_dict["train_loss"] = train_loss

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        contributed = d.pop("contributed")

        data_holder = d.pop("data_holder")

        def _parse_excluded_subjects(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        excluded_subjects = _parse_excluded_subjects(d.pop("excluded_subjects", UNSET))


        def _parse_samples(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        samples = _parse_samples(d.pop("samples", UNSET))


        def _parse_train_loss(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        train_loss = _parse_train_loss(d.pop("train_loss", UNSET))


        site_contribution_view = cls(
            contributed=contributed,
            data_holder=data_holder,
            excluded_subjects=excluded_subjects,
            samples=samples,
            train_loss=train_loss,
        )


        site_contribution_view.additional_properties = d
        return site_contribution_view

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
