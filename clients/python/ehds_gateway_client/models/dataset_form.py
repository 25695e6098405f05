from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.contact_form import ContactForm
  from ..models.dataset_form_description import DatasetFormDescription
  from ..models.dataset_form_keywords import DatasetFormKeywords
  from ..models.dataset_form_population_coverage import DatasetFormPopulationCoverage
  from ..models.dataset_form_provenance import DatasetFormProvenance
  from ..models.dataset_form_title import DatasetFormTitle
  from ..models.distribution_form import DistributionForm
  from ..models.period_form import PeriodForm
  from ..models.publisher_form import PublisherForm
  from ..models.quality_label_form import QualityLabelForm





T = TypeVar("T", bound="DatasetForm")



@_attrs_define
class DatasetForm:
    """ A dataset description as a data holder submits it. Texts are keyed by language tag.

        Attributes:
            access_rights (str): `dct:accessRights`: `non_public` (through a data permit) or `public`.
            contact_point (ContactForm):
            dataset_type (str): `dct:type`: `personal_data`, `synthetic_data` or `statistical`.
            description (DatasetFormDescription): `dct:description` by language tag.
            identifier (str): The holder's own identifier of the dataset (`dct:identifier`).
            publisher (PublisherForm):
            title (DatasetFormTitle): `dct:title` by language tag (e.g. `{"en": "...", "de": "..."}`).
            applicable_legislation (list[str] | Unset): Further legislation (ELI IRIs) besides the EHDS Regulation, always
                stated.
            available_features (list[str] | Unset): The feature-specification variables the holder's node can provide.
            distributions (list[DistributionForm] | Unset): `dcat:distribution`s: at least one.
            health_categories (list[str] | Unset): Art. 51(1) categories (`healthdcatap:healthCategory`).
            keywords (DatasetFormKeywords | Unset): `dcat:keyword`s by language tag.
            legal_basis (list[str] | Unset): GDPR legal bases (`dpv:hasLegalBasis`), e.g. `gdpr_9_2_j`.
            max_typical_age (int | None | Unset):
            min_typical_age (int | None | Unset):
            number_of_records (int | None | Unset): Published rounded (`healthdcatap:numberOfRecords`).
            number_of_unique_individuals (int | None | Unset): Published rounded (`healthdcatap:numberOfUniqueIndividuals`).
            population_coverage (DatasetFormPopulationCoverage | Unset): `healthdcatap:populationCoverage` by language.
            provenance (DatasetFormProvenance | Unset): Where the data come from and how they were collected
                (`dct:provenance`), by language.
            publicly_funded (bool | Unset): Collected or processed with Union or national public funding: the label is then
                required (Art. 78(2)).
            purposes (list[str] | Unset): Art. 53(1) purposes the dataset suits (`dpv:hasPurpose`).
            quality_label (None | QualityLabelForm | Unset):
            spatial (list[str] | Unset): Member States the data cover (`dct:spatial`).
            temporal (None | PeriodForm | Unset):
            themes (list[str] | Unset): EU data themes (`dcat:theme`), e.g. `HEAL`.
            version (None | str | Unset): The holder's version of the dataset (`dcat:version`).
     """

    access_rights: str
    contact_point: ContactForm
    dataset_type: str
    description: DatasetFormDescription
    identifier: str
    publisher: PublisherForm
    title: DatasetFormTitle
    applicable_legislation: list[str] | Unset = UNSET
    available_features: list[str] | Unset = UNSET
    distributions: list[DistributionForm] | Unset = UNSET
    health_categories: list[str] | Unset = UNSET
    keywords: DatasetFormKeywords | Unset = UNSET
    legal_basis: list[str] | Unset = UNSET
    max_typical_age: int | None | Unset = UNSET
    min_typical_age: int | None | Unset = UNSET
    number_of_records: int | None | Unset = UNSET
    number_of_unique_individuals: int | None | Unset = UNSET
    population_coverage: DatasetFormPopulationCoverage | Unset = UNSET
    provenance: DatasetFormProvenance | Unset = UNSET
    publicly_funded: bool | Unset = UNSET
    purposes: list[str] | Unset = UNSET
    quality_label: None | QualityLabelForm | Unset = UNSET
    spatial: list[str] | Unset = UNSET
    temporal: None | PeriodForm | Unset = UNSET
    themes: list[str] | Unset = UNSET
    version: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.contact_form import ContactForm # noqa: PLC0415
        from ..models.dataset_form_description import DatasetFormDescription # noqa: PLC0415
        from ..models.dataset_form_keywords import DatasetFormKeywords # noqa: PLC0415
        from ..models.dataset_form_population_coverage import DatasetFormPopulationCoverage # noqa: PLC0415
        from ..models.dataset_form_provenance import DatasetFormProvenance # noqa: PLC0415
        from ..models.dataset_form_title import DatasetFormTitle # noqa: PLC0415
        from ..models.distribution_form import DistributionForm # noqa: PLC0415
        from ..models.period_form import PeriodForm # noqa: PLC0415
        from ..models.publisher_form import PublisherForm # noqa: PLC0415
        from ..models.quality_label_form import QualityLabelForm # noqa: PLC0415
        access_rights = self.access_rights

        contact_point = self.contact_point.to_dict()

        dataset_type = self.dataset_type

        description = self.description.to_dict()

        identifier = self.identifier

        publisher = self.publisher.to_dict()

        title = self.title.to_dict()

        applicable_legislation: list[str] | Unset = UNSET
        if not isinstance(self.applicable_legislation, Unset):
            applicable_legislation = self.applicable_legislation



        available_features: list[str] | Unset = UNSET
        if not isinstance(self.available_features, Unset):
            available_features = self.available_features



        distributions: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.distributions, Unset):
            distributions = []
            for distributions_item_data in self.distributions:
                distributions_item = distributions_item_data.to_dict()
                distributions.append(distributions_item)



        health_categories: list[str] | Unset = UNSET
        if not isinstance(self.health_categories, Unset):
            health_categories = self.health_categories



        keywords: dict[str, Any] | Unset = UNSET
        if not isinstance(self.keywords, Unset):
            keywords = self.keywords.to_dict()

        legal_basis: list[str] | Unset = UNSET
        if not isinstance(self.legal_basis, Unset):
            legal_basis = self.legal_basis



        max_typical_age: int | None | Unset
        if isinstance(self.max_typical_age, Unset):
            max_typical_age = UNSET
        else:
            max_typical_age = self.max_typical_age

        min_typical_age: int | None | Unset
        if isinstance(self.min_typical_age, Unset):
            min_typical_age = UNSET
        else:
            min_typical_age = self.min_typical_age

        number_of_records: int | None | Unset
        if isinstance(self.number_of_records, Unset):
            number_of_records = UNSET
        else:
            number_of_records = self.number_of_records

        number_of_unique_individuals: int | None | Unset
        if isinstance(self.number_of_unique_individuals, Unset):
            number_of_unique_individuals = UNSET
        else:
            number_of_unique_individuals = self.number_of_unique_individuals

        population_coverage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.population_coverage, Unset):
            population_coverage = self.population_coverage.to_dict()

        provenance: dict[str, Any] | Unset = UNSET
        if not isinstance(self.provenance, Unset):
            provenance = self.provenance.to_dict()

        publicly_funded = self.publicly_funded

        purposes: list[str] | Unset = UNSET
        if not isinstance(self.purposes, Unset):
            purposes = self.purposes



        quality_label: dict[str, Any] | None | Unset
        if isinstance(self.quality_label, Unset):
            quality_label = UNSET
        elif isinstance(self.quality_label, QualityLabelForm):
            quality_label = self.quality_label.to_dict()
        else:
            quality_label = self.quality_label

        spatial: list[str] | Unset = UNSET
        if not isinstance(self.spatial, Unset):
            spatial = self.spatial



        temporal: dict[str, Any] | None | Unset
        if isinstance(self.temporal, Unset):
            temporal = UNSET
        elif isinstance(self.temporal, PeriodForm):
            temporal = self.temporal.to_dict()
        else:
            temporal = self.temporal

        themes: list[str] | Unset = UNSET
        if not isinstance(self.themes, Unset):
            themes = self.themes



        version: None | str | Unset
        if isinstance(self.version, Unset):
            version = UNSET
        else:
            version = self.version


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "access_rights": access_rights,
            "contact_point": contact_point,
            "dataset_type": dataset_type,
            "description": description,
            "identifier": identifier,
            "publisher": publisher,
            "title": title,
        })
        if applicable_legislation is not UNSET:
            field_dict["applicable_legislation"] = applicable_legislation
        if available_features is not UNSET:
            field_dict["available_features"] = available_features
        if distributions is not UNSET:
            field_dict["distributions"] = distributions
        if health_categories is not UNSET:
            field_dict["health_categories"] = health_categories
        if keywords is not UNSET:
            field_dict["keywords"] = keywords
        if legal_basis is not UNSET:
            field_dict["legal_basis"] = legal_basis
        if max_typical_age is not UNSET:
            field_dict["max_typical_age"] = max_typical_age
        if min_typical_age is not UNSET:
            field_dict["min_typical_age"] = min_typical_age
        if number_of_records is not UNSET:
            field_dict["number_of_records"] = number_of_records
        if number_of_unique_individuals is not UNSET:
            field_dict["number_of_unique_individuals"] = number_of_unique_individuals
        if population_coverage is not UNSET:
            field_dict["population_coverage"] = population_coverage
        if provenance is not UNSET:
            field_dict["provenance"] = provenance
        if publicly_funded is not UNSET:
            field_dict["publicly_funded"] = publicly_funded
        if purposes is not UNSET:
            field_dict["purposes"] = purposes
        if quality_label is not UNSET:
            field_dict["quality_label"] = quality_label
        if spatial is not UNSET:
            field_dict["spatial"] = spatial
        if temporal is not UNSET:
            field_dict["temporal"] = temporal
        if themes is not UNSET:
            field_dict["themes"] = themes
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.contact_form import ContactForm # noqa: PLC0415
        from ..models.dataset_form_description import DatasetFormDescription # noqa: PLC0415
        from ..models.dataset_form_keywords import DatasetFormKeywords # noqa: PLC0415
        from ..models.dataset_form_population_coverage import DatasetFormPopulationCoverage # noqa: PLC0415
        from ..models.dataset_form_provenance import DatasetFormProvenance # noqa: PLC0415
        from ..models.dataset_form_title import DatasetFormTitle # noqa: PLC0415
        from ..models.distribution_form import DistributionForm # noqa: PLC0415
        from ..models.period_form import PeriodForm # noqa: PLC0415
        from ..models.publisher_form import PublisherForm # noqa: PLC0415
        from ..models.quality_label_form import QualityLabelForm # noqa: PLC0415
        d = dict(src_dict)
        access_rights = d.pop("access_rights")

        contact_point = ContactForm.from_dict(d.pop("contact_point"))




        dataset_type = d.pop("dataset_type")

        description = DatasetFormDescription.from_dict(d.pop("description"))




        identifier = d.pop("identifier")

        publisher = PublisherForm.from_dict(d.pop("publisher"))




        title = DatasetFormTitle.from_dict(d.pop("title"))




        applicable_legislation = cast(list[str], d.pop("applicable_legislation", UNSET))


        available_features = cast(list[str], d.pop("available_features", UNSET))


        _distributions = d.pop("distributions", UNSET)
        distributions: list[DistributionForm] | Unset = UNSET
        if _distributions is not UNSET:
            distributions = []
            for distributions_item_data in _distributions:
                distributions_item = DistributionForm.from_dict(distributions_item_data)



                distributions.append(distributions_item)


        health_categories = cast(list[str], d.pop("health_categories", UNSET))


        _keywords = d.pop("keywords", UNSET)
        keywords: DatasetFormKeywords | Unset
        if isinstance(_keywords,  Unset):
            keywords = UNSET
        else:
            keywords = DatasetFormKeywords.from_dict(_keywords)




        legal_basis = cast(list[str], d.pop("legal_basis", UNSET))


        def _parse_max_typical_age(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_typical_age = _parse_max_typical_age(d.pop("max_typical_age", UNSET))


        def _parse_min_typical_age(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        min_typical_age = _parse_min_typical_age(d.pop("min_typical_age", UNSET))


        def _parse_number_of_records(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        number_of_records = _parse_number_of_records(d.pop("number_of_records", UNSET))


        def _parse_number_of_unique_individuals(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        number_of_unique_individuals = _parse_number_of_unique_individuals(d.pop("number_of_unique_individuals", UNSET))


        _population_coverage = d.pop("population_coverage", UNSET)
        population_coverage: DatasetFormPopulationCoverage | Unset
        if isinstance(_population_coverage,  Unset):
            population_coverage = UNSET
        else:
            population_coverage = DatasetFormPopulationCoverage.from_dict(_population_coverage)




        _provenance = d.pop("provenance", UNSET)
        provenance: DatasetFormProvenance | Unset
        if isinstance(_provenance,  Unset):
            provenance = UNSET
        else:
            provenance = DatasetFormProvenance.from_dict(_provenance)




        publicly_funded = d.pop("publicly_funded", UNSET)

        purposes = cast(list[str], d.pop("purposes", UNSET))


        def _parse_quality_label(data: object) -> None | QualityLabelForm | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                quality_label_type_0 = QualityLabelForm.from_dict(data)



                return quality_label_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | QualityLabelForm | Unset, data)

        quality_label = _parse_quality_label(d.pop("quality_label", UNSET))


        spatial = cast(list[str], d.pop("spatial", UNSET))


        def _parse_temporal(data: object) -> None | PeriodForm | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                temporal_type_0 = PeriodForm.from_dict(data)



                return temporal_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PeriodForm | Unset, data)

        temporal = _parse_temporal(d.pop("temporal", UNSET))


        themes = cast(list[str], d.pop("themes", UNSET))


        def _parse_version(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        version = _parse_version(d.pop("version", UNSET))


        dataset_form = cls(
            access_rights=access_rights,
            contact_point=contact_point,
            dataset_type=dataset_type,
            description=description,
            identifier=identifier,
            publisher=publisher,
            title=title,
            applicable_legislation=applicable_legislation,
            available_features=available_features,
            distributions=distributions,
            health_categories=health_categories,
            keywords=keywords,
            legal_basis=legal_basis,
            max_typical_age=max_typical_age,
            min_typical_age=min_typical_age,
            number_of_records=number_of_records,
            number_of_unique_individuals=number_of_unique_individuals,
            population_coverage=population_coverage,
            provenance=provenance,
            publicly_funded=publicly_funded,
            purposes=purposes,
            quality_label=quality_label,
            spatial=spatial,
            temporal=temporal,
            themes=themes,
            version=version,
        )

        return dataset_form

