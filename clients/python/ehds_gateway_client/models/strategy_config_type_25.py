from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.fed_map_tier import FedMapTier
from ..models.strategy_config_type_25_name import StrategyConfigType25Name
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="StrategyConfigType25")



@_attrs_define
class StrategyConfigType25:
    """ 
        Attributes:
            name (StrategyConfigType25Name):
            alpha (float | Unset): Weight of the Gaussian term `(alpha/2)||theta - mu||^2`. Default: 0.009999999776482582.
            buckets (int | Unset): Buckets of the summary input for larger tensors. Default: 16.
            eps (float | Unset): Weight-decay term `eps (||theta||^2 + ||mu||^2)`. Default: 9.999999747378752e-05.
            exact_cap (int | Unset): Tensors with at most this many values get the exact `[theta; mu]` input. Default: 512.
            fine_tune_steps (int | None | Unset): T2 fine-tuning steps; `None` = the site's local budget.
            hidden (list[int] | Unset): Hidden widths of every tensor's input-convex network.
            lr_psi (float | Unset): Adam learning rate of the server's steps on psi. Default: 0.001.
            seed (int | Unset): Seed of psi's initialisation and of T2's batch order. Default: 0.
            server_steps (int | Unset): Server steps on psi per round (S_agg); 0 keeps the initial prior. Default: 2.
            tier (FedMapTier | Unset): Which model a FedMAP site evaluates (and the simulation checkpoints and tests).
     """

    name: StrategyConfigType25Name
    alpha: float | Unset = 0.009999999776482582
    buckets: int | Unset = 16
    eps: float | Unset = 9.999999747378752e-05
    exact_cap: int | Unset = 512
    fine_tune_steps: int | None | Unset = UNSET
    hidden: list[int] | Unset = UNSET
    lr_psi: float | Unset = 0.001
    seed: int | Unset = 0
    server_steps: int | Unset = 2
    tier: FedMapTier | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha = self.alpha

        buckets = self.buckets

        eps = self.eps

        exact_cap = self.exact_cap

        fine_tune_steps: int | None | Unset
        if isinstance(self.fine_tune_steps, Unset):
            fine_tune_steps = UNSET
        else:
            fine_tune_steps = self.fine_tune_steps

        hidden: list[int] | Unset = UNSET
        if not isinstance(self.hidden, Unset):
            hidden = self.hidden



        lr_psi = self.lr_psi

        seed = self.seed

        server_steps = self.server_steps

        tier: str | Unset = UNSET
        if not isinstance(self.tier, Unset):
            tier = self.tier.value



        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if alpha is not UNSET:
            field_dict["alpha"] = alpha
        if buckets is not UNSET:
            field_dict["buckets"] = buckets
        if eps is not UNSET:
            field_dict["eps"] = eps
        if exact_cap is not UNSET:
            field_dict["exact_cap"] = exact_cap
        if fine_tune_steps is not UNSET:
            field_dict["fine_tune_steps"] = fine_tune_steps
        if hidden is not UNSET:
            field_dict["hidden"] = hidden
        if lr_psi is not UNSET:
            field_dict["lr_psi"] = lr_psi
        if seed is not UNSET:
            field_dict["seed"] = seed
        if server_steps is not UNSET:
            field_dict["server_steps"] = server_steps
        if tier is not UNSET:
            field_dict["tier"] = tier

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType25Name(d.pop("name"))




        alpha = d.pop("alpha", UNSET)

        buckets = d.pop("buckets", UNSET)

        eps = d.pop("eps", UNSET)

        exact_cap = d.pop("exact_cap", UNSET)

        def _parse_fine_tune_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        fine_tune_steps = _parse_fine_tune_steps(d.pop("fine_tune_steps", UNSET))


        hidden = cast(list[int], d.pop("hidden", UNSET))


        lr_psi = d.pop("lr_psi", UNSET)

        seed = d.pop("seed", UNSET)

        server_steps = d.pop("server_steps", UNSET)

        _tier = d.pop("tier", UNSET)
        tier: FedMapTier | Unset
        if isinstance(_tier,  Unset):
            tier = UNSET
        else:
            tier = FedMapTier(_tier)




        strategy_config_type_25 = cls(
            name=name,
            alpha=alpha,
            buckets=buckets,
            eps=eps,
            exact_cap=exact_cap,
            fine_tune_steps=fine_tune_steps,
            hidden=hidden,
            lr_psi=lr_psi,
            seed=seed,
            server_steps=server_steps,
            tier=tier,
        )

        return strategy_config_type_25

