from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.label_statement_form import LabelStatementForm





T = TypeVar("T", bound="QualityLabelForm")



@_attrs_define
class QualityLabelForm:
    """ The label as submitted: the elements that apply (Art. 78(3): "where applicable").

        Attributes:
            access_and_provision (LabelStatementForm | None | Unset):
            coverage (LabelStatementForm | None | Unset):
            documentation (LabelStatementForm | None | Unset):
            modifications (LabelStatementForm | None | Unset):
            quality_management (LabelStatementForm | None | Unset):
            technical_quality (LabelStatementForm | None | Unset):
     """

    access_and_provision: LabelStatementForm | None | Unset = UNSET
    coverage: LabelStatementForm | None | Unset = UNSET
    documentation: LabelStatementForm | None | Unset = UNSET
    modifications: LabelStatementForm | None | Unset = UNSET
    quality_management: LabelStatementForm | None | Unset = UNSET
    technical_quality: LabelStatementForm | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.label_statement_form import LabelStatementForm # noqa: PLC0415
        access_and_provision: dict[str, Any] | None | Unset
        if isinstance(self.access_and_provision, Unset):
            access_and_provision = UNSET
        elif isinstance(self.access_and_provision, LabelStatementForm):
            access_and_provision = self.access_and_provision.to_dict()
        else:
            access_and_provision = self.access_and_provision

        coverage: dict[str, Any] | None | Unset
        if isinstance(self.coverage, Unset):
            coverage = UNSET
        elif isinstance(self.coverage, LabelStatementForm):
            coverage = self.coverage.to_dict()
        else:
            coverage = self.coverage

        documentation: dict[str, Any] | None | Unset
        if isinstance(self.documentation, Unset):
            documentation = UNSET
        elif isinstance(self.documentation, LabelStatementForm):
            documentation = self.documentation.to_dict()
        else:
            documentation = self.documentation

        modifications: dict[str, Any] | None | Unset
        if isinstance(self.modifications, Unset):
            modifications = UNSET
        elif isinstance(self.modifications, LabelStatementForm):
            modifications = self.modifications.to_dict()
        else:
            modifications = self.modifications

        quality_management: dict[str, Any] | None | Unset
        if isinstance(self.quality_management, Unset):
            quality_management = UNSET
        elif isinstance(self.quality_management, LabelStatementForm):
            quality_management = self.quality_management.to_dict()
        else:
            quality_management = self.quality_management

        technical_quality: dict[str, Any] | None | Unset
        if isinstance(self.technical_quality, Unset):
            technical_quality = UNSET
        elif isinstance(self.technical_quality, LabelStatementForm):
            technical_quality = self.technical_quality.to_dict()
        else:
            technical_quality = self.technical_quality


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if access_and_provision is not UNSET:
            field_dict["access_and_provision"] = access_and_provision
        if coverage is not UNSET:
            field_dict["coverage"] = coverage
        if documentation is not UNSET:
            field_dict["documentation"] = documentation
        if modifications is not UNSET:
            field_dict["modifications"] = modifications
        if quality_management is not UNSET:
            field_dict["quality_management"] = quality_management
        if technical_quality is not UNSET:
            field_dict["technical_quality"] = technical_quality

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.label_statement_form import LabelStatementForm # noqa: PLC0415
        d = dict(src_dict)
        def _parse_access_and_provision(data: object) -> LabelStatementForm | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                access_and_provision_type_0 = LabelStatementForm.from_dict(data)



                return access_and_provision_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LabelStatementForm | None | Unset, data)

        access_and_provision = _parse_access_and_provision(d.pop("access_and_provision", UNSET))


        def _parse_coverage(data: object) -> LabelStatementForm | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                coverage_type_0 = LabelStatementForm.from_dict(data)



                return coverage_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LabelStatementForm | None | Unset, data)

        coverage = _parse_coverage(d.pop("coverage", UNSET))


        def _parse_documentation(data: object) -> LabelStatementForm | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                documentation_type_0 = LabelStatementForm.from_dict(data)



                return documentation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LabelStatementForm | None | Unset, data)

        documentation = _parse_documentation(d.pop("documentation", UNSET))


        def _parse_modifications(data: object) -> LabelStatementForm | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                modifications_type_0 = LabelStatementForm.from_dict(data)



                return modifications_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LabelStatementForm | None | Unset, data)

        modifications = _parse_modifications(d.pop("modifications", UNSET))


        def _parse_quality_management(data: object) -> LabelStatementForm | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                quality_management_type_0 = LabelStatementForm.from_dict(data)



                return quality_management_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LabelStatementForm | None | Unset, data)

        quality_management = _parse_quality_management(d.pop("quality_management", UNSET))


        def _parse_technical_quality(data: object) -> LabelStatementForm | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                technical_quality_type_0 = LabelStatementForm.from_dict(data)



                return technical_quality_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LabelStatementForm | None | Unset, data)

        technical_quality = _parse_technical_quality(d.pop("technical_quality", UNSET))


        quality_label_form = cls(
            access_and_provision=access_and_provision,
            coverage=coverage,
            documentation=documentation,
            modifications=modifications,
            quality_management=quality_management,
            technical_quality=technical_quality,
        )

        return quality_label_form

