from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.backbone_request_type_0 import BackboneRequestType0
  from ..models.backbone_request_type_1 import BackboneRequestType1
  from ..models.backbone_request_type_2 import BackboneRequestType2
  from ..models.backbone_request_type_3 import BackboneRequestType3
  from ..models.backbone_request_type_4 import BackboneRequestType4





T = TypeVar("T", bound="ModelRequest")



@_attrs_define
class ModelRequest:
    """ 
        Attributes:
            architecture (str): `logistic`, `mlp`, `apfl` (APFL's twins), `head_net` (FedPer, MOON, HPFL) or `fenda`
                (FENDA-FL, PerFCL): MLP forms over the whole row. With a `backbone`: `net` (the
                backbone and an output layer), `head_net`, `fenda` or `apfl` over that backbone.
            backbone (BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 |
                BackboneRequestType4 | None | Unset):
            dropout (float | Unset):
            hidden (list[int] | Unset): Hidden widths: of the MLP, of each APFL twin, of the head net's body, or of FENDA's
                global extractor.
            local_backbone (BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 |
                BackboneRequestType4 | None | Unset):
            local_hidden (list[int] | None | Unset): FENDA-FL's local extractor (defaults to `hidden`).
            outputs (int | None | Unset): Output width; follows from the task when left out, refused when it does not fit
                it.
     """

    architecture: str
    backbone: BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 | BackboneRequestType4 | None | Unset = UNSET
    dropout: float | Unset = UNSET
    hidden: list[int] | Unset = UNSET
    local_backbone: BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 | BackboneRequestType4 | None | Unset = UNSET
    local_hidden: list[int] | None | Unset = UNSET
    outputs: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.backbone_request_type_0 import BackboneRequestType0 # noqa: PLC0415
        from ..models.backbone_request_type_1 import BackboneRequestType1 # noqa: PLC0415
        from ..models.backbone_request_type_2 import BackboneRequestType2 # noqa: PLC0415
        from ..models.backbone_request_type_3 import BackboneRequestType3 # noqa: PLC0415
        from ..models.backbone_request_type_4 import BackboneRequestType4 # noqa: PLC0415
        architecture = self.architecture

        backbone: dict[str, Any] | None | Unset
        if isinstance(self.backbone, Unset):
            backbone = UNSET
        elif isinstance(self.backbone, BackboneRequestType0):
            backbone = self.backbone.to_dict()
        elif isinstance(self.backbone, BackboneRequestType1):
            backbone = self.backbone.to_dict()
        elif isinstance(self.backbone, BackboneRequestType2):
            backbone = self.backbone.to_dict()
        elif isinstance(self.backbone, BackboneRequestType3):
            backbone = self.backbone.to_dict()
        elif isinstance(self.backbone, BackboneRequestType4):
            backbone = self.backbone.to_dict()
        else:
            backbone = self.backbone

        dropout = self.dropout

        hidden: list[int] | Unset = UNSET
        if not isinstance(self.hidden, Unset):
            hidden = self.hidden



        local_backbone: dict[str, Any] | None | Unset
        if isinstance(self.local_backbone, Unset):
            local_backbone = UNSET
        elif isinstance(self.local_backbone, BackboneRequestType0):
            local_backbone = self.local_backbone.to_dict()
        elif isinstance(self.local_backbone, BackboneRequestType1):
            local_backbone = self.local_backbone.to_dict()
        elif isinstance(self.local_backbone, BackboneRequestType2):
            local_backbone = self.local_backbone.to_dict()
        elif isinstance(self.local_backbone, BackboneRequestType3):
            local_backbone = self.local_backbone.to_dict()
        elif isinstance(self.local_backbone, BackboneRequestType4):
            local_backbone = self.local_backbone.to_dict()
        else:
            local_backbone = self.local_backbone

        local_hidden: list[int] | None | Unset
        if isinstance(self.local_hidden, Unset):
            local_hidden = UNSET
        elif isinstance(self.local_hidden, list):
            local_hidden = self.local_hidden


        else:
            local_hidden = self.local_hidden

        outputs: int | None | Unset
        if isinstance(self.outputs, Unset):
            outputs = UNSET
        else:
            outputs = self.outputs


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "architecture": architecture,
        })
        if backbone is not UNSET:
            field_dict["backbone"] = backbone
        if dropout is not UNSET:
            field_dict["dropout"] = dropout
        if hidden is not UNSET:
            field_dict["hidden"] = hidden
        if local_backbone is not UNSET:
            field_dict["local_backbone"] = local_backbone
        if local_hidden is not UNSET:
            field_dict["local_hidden"] = local_hidden
        if outputs is not UNSET:
            field_dict["outputs"] = outputs

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.backbone_request_type_0 import BackboneRequestType0 # noqa: PLC0415
        from ..models.backbone_request_type_1 import BackboneRequestType1 # noqa: PLC0415
        from ..models.backbone_request_type_2 import BackboneRequestType2 # noqa: PLC0415
        from ..models.backbone_request_type_3 import BackboneRequestType3 # noqa: PLC0415
        from ..models.backbone_request_type_4 import BackboneRequestType4 # noqa: PLC0415
        d = dict(src_dict)
        architecture = d.pop("architecture")

        def _parse_backbone(data: object) -> BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 | BackboneRequestType4 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_0 = BackboneRequestType0.from_dict(data)



                return componentsschemas_backbone_request_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_1 = BackboneRequestType1.from_dict(data)



                return componentsschemas_backbone_request_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_2 = BackboneRequestType2.from_dict(data)



                return componentsschemas_backbone_request_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_3 = BackboneRequestType3.from_dict(data)



                return componentsschemas_backbone_request_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_4 = BackboneRequestType4.from_dict(data)



                return componentsschemas_backbone_request_type_4
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 | BackboneRequestType4 | None | Unset, data)

        backbone = _parse_backbone(d.pop("backbone", UNSET))


        dropout = d.pop("dropout", UNSET)

        hidden = cast(list[int], d.pop("hidden", UNSET))


        def _parse_local_backbone(data: object) -> BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 | BackboneRequestType4 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_0 = BackboneRequestType0.from_dict(data)



                return componentsschemas_backbone_request_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_1 = BackboneRequestType1.from_dict(data)



                return componentsschemas_backbone_request_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_2 = BackboneRequestType2.from_dict(data)



                return componentsschemas_backbone_request_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_3 = BackboneRequestType3.from_dict(data)



                return componentsschemas_backbone_request_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_backbone_request_type_4 = BackboneRequestType4.from_dict(data)



                return componentsschemas_backbone_request_type_4
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BackboneRequestType0 | BackboneRequestType1 | BackboneRequestType2 | BackboneRequestType3 | BackboneRequestType4 | None | Unset, data)

        local_backbone = _parse_local_backbone(d.pop("local_backbone", UNSET))


        def _parse_local_hidden(data: object) -> list[int] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                local_hidden_type_0 = cast(list[int], data)

                return local_hidden_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | None | Unset, data)

        local_hidden = _parse_local_hidden(d.pop("local_hidden", UNSET))


        def _parse_outputs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        outputs = _parse_outputs(d.pop("outputs", UNSET))


        model_request = cls(
            architecture=architecture,
            backbone=backbone,
            dropout=dropout,
            hidden=hidden,
            local_backbone=local_backbone,
            local_hidden=local_hidden,
            outputs=outputs,
        )

        return model_request

