from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.secagg_view_config import SecaggViewConfig
  from ..models.secagg_view_relayed_type_0 import SecaggViewRelayedType0





T = TypeVar("T", bound="SecaggView")



@_attrs_define
class SecaggView:
    """ `GET /v1/node/tasks/{id}/secagg`: where the round's secure aggregation stands for the
    calling holder.

        Attributes:
            awaited (bool): Whether the stage still waits for the caller's message.
            client (int): The caller's number in the session.
            config (SecaggViewConfig): The session's public parameters (`secagg::RoundConfig`).
            stage (str): The stage the relay collects now: `advertise_keys`, `share_keys`, `masked_input`,
                `unmasking` or `finished`.
            stage_deadline (datetime.datetime): When the stage closes at the latest.
            relayed (None | SecaggViewRelayedType0 | Unset): What the last closed stage relayed to the caller; absent when
                it was not admitted.
     """

    awaited: bool
    client: int
    config: SecaggViewConfig
    stage: str
    stage_deadline: datetime.datetime
    relayed: None | SecaggViewRelayedType0 | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.secagg_view_config import SecaggViewConfig # noqa: PLC0415
        from ..models.secagg_view_relayed_type_0 import SecaggViewRelayedType0 # noqa: PLC0415
        awaited = self.awaited

        client = self.client

        config = self.config.to_dict()

        stage = self.stage

        stage_deadline = self.stage_deadline.isoformat()

        relayed: dict[str, Any] | None | Unset
        if isinstance(self.relayed, Unset):
            relayed = UNSET
        elif isinstance(self.relayed, SecaggViewRelayedType0):
            relayed = self.relayed.to_dict()
        else:
            relayed = self.relayed


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "awaited": awaited,
            "client": client,
            "config": config,
            "stage": stage,
            "stage_deadline": stage_deadline,
        })
        if relayed is not UNSET:
            field_dict["relayed"] = relayed

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.secagg_view_config import SecaggViewConfig # noqa: PLC0415
        from ..models.secagg_view_relayed_type_0 import SecaggViewRelayedType0 # noqa: PLC0415
        d = dict(src_dict)
        awaited = d.pop("awaited")

        client = d.pop("client")

        config = SecaggViewConfig.from_dict(d.pop("config"))




        stage = d.pop("stage")

        stage_deadline = datetime.datetime.fromisoformat(d.pop("stage_deadline"))




        def _parse_relayed(data: object) -> None | SecaggViewRelayedType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                relayed_type_0 = SecaggViewRelayedType0.from_dict(data)



                return relayed_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SecaggViewRelayedType0 | Unset, data)

        relayed = _parse_relayed(d.pop("relayed", UNSET))


        secagg_view = cls(
            awaited=awaited,
            client=client,
            config=config,
            stage=stage,
            stage_deadline=stage_deadline,
            relayed=relayed,
        )


        secagg_view.additional_properties = d
        return secagg_view

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
