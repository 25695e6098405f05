from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.backbone_request_type_0_kind import BackboneRequestType0Kind
from ..models.inputs_request_type_0 import InputsRequestType0
from ..models.inputs_request_type_1 import InputsRequestType1
from ..models.inputs_request_type_2 import InputsRequestType2
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.backbone_request_mlp_norm import BackboneRequestMlpNorm
  from ..models.inputs_request_type_3 import InputsRequestType3





T = TypeVar("T", bound="BackboneRequestType0")



@_attrs_define
class BackboneRequestType0:
    """ Linear -> norm -> ReLU -> dropout per hidden layer.

        Attributes:
            hidden (list[int]):
            kind (BackboneRequestType0Kind):
            dropout (float | Unset):
            inputs (InputsRequestType0 | InputsRequestType1 | InputsRequestType2 | InputsRequestType3 | Unset): Which part
                of the row an MLP extractor reads (see [`RowLayout`]).
            norm (BackboneRequestMlpNorm | Unset): `{"kind": "none" | "layer" | "batch"}` or `{"kind": "group", "groups":
                G}`.
     """

    hidden: list[int]
    kind: BackboneRequestType0Kind
    dropout: float | Unset = UNSET
    inputs: InputsRequestType0 | InputsRequestType1 | InputsRequestType2 | InputsRequestType3 | Unset = UNSET
    norm: BackboneRequestMlpNorm | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.backbone_request_mlp_norm import BackboneRequestMlpNorm # noqa: PLC0415
        from ..models.inputs_request_type_3 import InputsRequestType3 # noqa: PLC0415
        hidden = self.hidden



        kind = self.kind.value

        dropout = self.dropout

        inputs: dict[str, Any] | str | Unset
        if isinstance(self.inputs, Unset):
            inputs = UNSET
        elif isinstance(self.inputs, InputsRequestType0):
            inputs = self.inputs.value
        elif isinstance(self.inputs, InputsRequestType1):
            inputs = self.inputs.value
        elif isinstance(self.inputs, InputsRequestType2):
            inputs = self.inputs.value
        else:
            inputs = self.inputs.to_dict()


        norm: dict[str, Any] | Unset = UNSET
        if not isinstance(self.norm, Unset):
            norm = self.norm.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "hidden": hidden,
            "kind": kind,
        })
        if dropout is not UNSET:
            field_dict["dropout"] = dropout
        if inputs is not UNSET:
            field_dict["inputs"] = inputs
        if norm is not UNSET:
            field_dict["norm"] = norm

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.backbone_request_mlp_norm import BackboneRequestMlpNorm # noqa: PLC0415
        from ..models.inputs_request_type_3 import InputsRequestType3 # noqa: PLC0415
        d = dict(src_dict)
        hidden = cast(list[int], d.pop("hidden"))


        kind = BackboneRequestType0Kind(d.pop("kind"))




        dropout = d.pop("dropout", UNSET)

        def _parse_inputs(data: object) -> InputsRequestType0 | InputsRequestType1 | InputsRequestType2 | InputsRequestType3 | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_inputs_request_type_0 = InputsRequestType0(data)



                return componentsschemas_inputs_request_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_inputs_request_type_1 = InputsRequestType1(data)



                return componentsschemas_inputs_request_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_inputs_request_type_2 = InputsRequestType2(data)



                return componentsschemas_inputs_request_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            componentsschemas_inputs_request_type_3 = InputsRequestType3.from_dict(data)



            return componentsschemas_inputs_request_type_3

        inputs = _parse_inputs(d.pop("inputs", UNSET))


        _norm = d.pop("norm", UNSET)
        norm: BackboneRequestMlpNorm | Unset
        if isinstance(_norm,  Unset):
            norm = UNSET
        else:
            norm = BackboneRequestMlpNorm.from_dict(_norm)




        backbone_request_type_0 = cls(
            hidden=hidden,
            kind=kind,
            dropout=dropout,
            inputs=inputs,
            norm=norm,
        )


        backbone_request_type_0.additional_properties = d
        return backbone_request_type_0

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
