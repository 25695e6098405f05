"""A researcher's view of the gateway: apply, decide, submit, follow, read and download; and
the HDAB's bulk import of Art. 71 opt-outs.

The calls go through the generated client (`ehds_gateway_client`, from openapi/openapi.json);
what it does not model (the event stream, the model's bytes and headers, the NDJSON and FHIR
bodies of the opt-out import) goes through the same authenticated HTTP connection.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import httpx
import pandas as pd
from tqdm.auto import tqdm

from ehds_gateway_client import AuthenticatedClient
from ehds_gateway_client.api.applications import applications_create, applications_decide
from ehds_gateway_client.api.audit import audit_log_key
from ehds_gateway_client.api.permits import permits_read
from ehds_gateway_client.api.studies import (
    studies_cancel,
    studies_create,
    studies_read,
    studies_rounds,
)
from ehds_gateway_client.models import (
    Application,
    ApplicationRequest,
    CancelRequest,
    DecisionRequest,
    DecisionResponse,
    PermitView,
    StudyRequest,
    StudyView,
)

from . import sse
from .provenance import Provenance, verify_model

#: Study statuses after which nothing changes any more.
TERMINAL = frozenset({"completed", "cancelled", "stopped", "failed"})


class GatewayError(Exception):
    """The gateway refused a request: its HTTP status and problem+json body (`code`, `detail`,
    and for refused studies every reason)."""

    def __init__(self, status: int, problem: dict[str, Any]):
        self.status = status
        self.problem = problem
        self.code = problem.get("code")
        super().__init__(f"{status} {self.code}: {problem.get('detail') or problem.get('title')}")


@dataclass(frozen=True)
class ModelDownload:
    """A released model written to `path`, with what the gateway said about it."""

    path: Path
    round: int
    selection: str
    validation_loss: float | None
    provenance: Provenance | None


class Gateway:
    """One identity (a bearer token) at one gateway."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0):
        self.client = AuthenticatedClient(
            base_url=base_url.rstrip("/"),
            token=token,
            timeout=httpx.Timeout(timeout),
        )

    def _http(self) -> httpx.Client:
        return self.client.get_httpx_client()

    @staticmethod
    def _ok(response: Any) -> Any:
        """The parsed body of a 2xx response; a `GatewayError` otherwise."""
        status = int(response.status_code)
        if status >= 400:
            raise GatewayError(status, _problem(response.content))
        return response.parsed

    # --- permits -------------------------------------------------------------------------

    def apply(self, application: dict[str, Any]) -> Application:
        """Submits a data access application (the body of `POST /v1/applications`)."""
        body = ApplicationRequest.from_dict(application)
        return self._ok(applications_create.sync_detailed(client=self.client, body=body))

    def decide(self, application_id: str, decision: dict[str, Any]) -> DecisionResponse:
        """An HDAB officer's decision, e.g. `{"decision": "approve"}`; an approval carries the
        permit."""
        body = DecisionRequest.from_dict(decision)
        return self._ok(
            applications_decide.sync_detailed(str(application_id), client=self.client, body=body)
        )

    def permit(self, permit_id: str) -> PermitView:
        return self._ok(permits_read.sync_detailed(str(permit_id), client=self.client))

    # --- statistics (Art. 69) -------------------------------------------------------------

    def submit_data_request(
        self,
        request: dict[str, Any],
        *,
        feature_spec: dict[str, Any] | None = None,
        queries: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Submits an Art. 69 health data request: an application of kind `data_request`
        answered in anonymised statistical form only. `request` is the application body (as
        for `apply`); `feature_spec` and `queries` are its declared statistical content, unless
        `request` already carries a `statistics` object. Returns the application as JSON; once
        it is granted, each query runs on the holders' nodes (see `statistics`)."""
        body = dict(request)
        body["kind"] = "data_request"
        if feature_spec is not None or queries is not None:
            body["statistics"] = {"feature_spec": feature_spec, "queries": queries or []}
        response = self._http().post("/v1/applications", json=body)
        return _json_or_raise(response)

    def request_statistics(
        self,
        permit_id: str,
        query: dict[str, Any],
        feature_spec: dict[str, Any],
        *,
        purpose: str = "scientific_research",
        data_holders: list[str] | None = None,
    ) -> dict[str, Any]:
        """Asks one statistical query under a permit (`POST /v1/permits/{id}/statistics`): it
        spends the permit's one privacy budget where it declares differential privacy."""
        body: dict[str, Any] = {"purpose": purpose, "feature_spec": feature_spec, "query": query}
        if data_holders:
            body["data_holders"] = data_holders
        return _json_or_raise(self._http().post(f"/v1/permits/{permit_id}/statistics", json=body))

    def statistics(
        self,
        *,
        permit_id: str | None = None,
        application_id: str | None = None,
        status: str | list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The statistics runs the caller may see, newest first, as JSON."""
        params: dict[str, str] = {}
        if permit_id:
            params["permit_id"] = str(permit_id)
        if application_id:
            params["application_id"] = str(application_id)
        if status:
            params["status"] = status if isinstance(status, str) else ",".join(status)
        return _json_or_raise(self._http().get("/v1/statistics", params=params))

    def wait_for_statistics(
        self,
        *,
        permit_id: str | None = None,
        application_id: str | None = None,
        expected: int | None = None,
        timeout: float = 300.0,
        poll_interval: float = 1.0,
    ) -> list[dict[str, Any]]:
        """Waits until no run of the permit or request is still computing (and, with
        `expected`, that many runs exist); returns them in the order they were started."""
        until = time.monotonic() + timeout
        while True:
            runs = self.statistics(permit_id=permit_id, application_id=application_id)
            settled = all(r["status"] != "computing" for r in runs)
            if settled and runs and (expected is None or len(runs) >= expected):
                return list(reversed(runs))
            if time.monotonic() > until:
                raise TimeoutError(f"statistics still computing after {timeout} s: {runs}")
            time.sleep(poll_interval)

    # --- opt-outs (Art. 71) ---------------------------------------------------------------

    def import_opt_outs(
        self,
        records: list[dict[str, Any]] | dict[str, Any] | str | bytes,
        *,
        member_state: str | None = None,
        channel: str | None = None,
    ) -> dict[str, Any]:
        """Imports opt-outs into the registry, all or nothing (`POST /v1/opt-outs/import`, an
        opt-out registrar's call). `records` is a list of NDJSON objects
        (`{"subject_pseudonym": ..., "id": ..., "member_state": ..., "withdrawn": ...}`),
        NDJSON text, or a FHIR R4 Bundle of Consent resources (a dict with
        `"resourceType": "Bundle"`). Returns the import report: `registered`, `withdrawn`,
        `unchanged` (re-imports of the same source ids) and the `registry_version` after it. A
        refused import changes nothing and raises `GatewayError` with every bad line."""
        if isinstance(records, dict):
            if records.get("resourceType") != "Bundle":
                raise ValueError("a dict must be a FHIR R4 Bundle of Consent resources")
            content, media = json.dumps(records).encode(), "application/fhir+json"
        elif isinstance(records, list):
            lines = "".join(json.dumps(r) + "\n" for r in records)
            content, media = lines.encode(), "application/x-ndjson"
        else:
            text = records.encode() if isinstance(records, str) else records
            content, media = text, "application/x-ndjson"
        params = {
            k: v for k, v in {"member_state": member_state, "channel": channel}.items() if v
        }
        response = self._http().post(
            "/v1/opt-outs/import",
            content=content,
            params=params,
            headers={"content-type": media},
        )
        if response.status_code >= 400:
            raise GatewayError(response.status_code, _problem(response.content))
        return response.json()

    # --- studies -------------------------------------------------------------------------

    def submit_study(self, study: dict[str, Any]) -> StudyView:
        """Submits a federated study (the body of `POST /v1/studies`). A study the permit does
        not cover is refused with every reason in the problem."""
        body = StudyRequest.from_dict(study)
        return self._ok(studies_create.sync_detailed(client=self.client, body=body))

    def study(self, study_id: str) -> StudyView:
        return self._ok(studies_read.sync_detailed(str(study_id), client=self.client))

    def cancel_study(self, study_id: str, reason: str) -> StudyView:
        body = CancelRequest(reason=reason)
        return self._ok(studies_cancel.sync_detailed(str(study_id), client=self.client, body=body))

    def rounds(self, study_id: str) -> dict[str, Any]:
        """The rounds view (`GET /v1/studies/{id}/rounds`) as JSON."""
        response = studies_rounds.sync_detailed(str(study_id), client=self.client)
        self._ok(response)
        return json.loads(response.content)

    def rounds_frame(self, study_id: str) -> pd.DataFrame:
        """One row per round attempt: round, attempt, phase, participants, samples, excluded
        subjects, epsilon of the round and in total, noise, and the holders' mean validation
        and test metrics as `val_<metric>` and `test_<metric>` columns (empty where the round
        was not evaluated or the small-cell rule withholds them)."""
        return rounds_frame(self.rounds(study_id))

    def events(self, study_id: str) -> Any:
        """The study's server-sent events (`study`, `round`, `end`) until the gateway closes
        the stream (at the end of the study, or after at most five minutes)."""
        with self._http().stream(
            "GET",
            f"/v1/studies/{study_id}/events",
            headers={"accept": "text/event-stream"},
            timeout=httpx.Timeout(30.0, read=None),
        ) as response:
            if response.status_code >= 400:
                raise GatewayError(response.status_code, _problem(response.read()))
            yield from sse.parse(response.iter_lines())

    def wait_for_study(
        self,
        study_id: str,
        *,
        timeout: float | None = None,
        progress: bool = True,
        poll_interval: float = 2.0,
        on_event: Callable[[sse.Event], None] | None = None,
    ) -> StudyView:
        """Follows the study until it is over and returns its final view, with a progress bar
        over its rounds. Follows the event stream, reconnecting whenever the gateway closes
        it, and polls the study instead where the stream cannot be had (a gateway without it,
        or a proxy that buffers it)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = tqdm(total=None, unit="round", desc=f"study {study_id}", disable=not progress)
        try:
            streaming = True
            while True:
                view = self.study(study_id)
                _show(bar, view.to_dict())
                if str(view.status) in TERMINAL:
                    return view
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"study {study_id} still {view.status} after {timeout} s")
                if streaming:
                    received = 0
                    try:
                        for event in self.events(study_id):
                            received += 1
                            if on_event is not None:
                                on_event(event)
                            if event.event == "study":
                                _show(bar, json.loads(event.data))
                            elif event.event == "round":
                                r = json.loads(event.data)
                                bar.set_postfix_str(f"round {r['round']} {r['phase']}")
                            elif event.event == "end":
                                break
                            if deadline is not None and time.monotonic() > deadline:
                                break
                        if received:
                            continue
                        # a stream that closes at once without a word is a proxy's doing:
                        # reconnecting at once would only spin
                    except GatewayError as e:
                        if e.status in (401, 403):
                            raise
                        streaming = False
                    except httpx.TransportError:
                        streaming = False
                time.sleep(poll_interval)
        finally:
            bar.close()

    # --- the model -----------------------------------------------------------------------

    def verifier_key(self) -> str:
        """The gateway's log verifier key (`GET /v1/audit/log/key`); pin it once and pass it to
        `download_model`, rather than fetching it next to every model."""
        response = audit_log_key.sync_detailed(client=self.client)
        self._ok(response)
        return response.content.decode().strip()

    def download_model(
        self, study_id: str, path: str | Path, *, verify_key: str | None = None
    ) -> ModelDownload:
        """Writes the study's released model (safetensors) to `path`. With `verify_key` (the
        gateway's verifier key) the file's signed provenance is checked first, and a file
        whose signature or parameters do not hold is not written
        (`provenance.ProvenanceError`)."""
        response = self._http().get(f"/v1/studies/{study_id}/model")
        if response.status_code >= 400:
            raise GatewayError(response.status_code, _problem(response.content))
        data = response.content
        statement = verify_model(data, verify_key) if verify_key is not None else None
        path = Path(path)
        path.write_bytes(data)
        loss = response.headers.get("x-model-validation-loss")
        return ModelDownload(
            path=path,
            round=int(response.headers["x-model-round"]),
            selection=response.headers["x-model-selection"],
            validation_loss=float(loss) if loss else None,
            provenance=statement,
        )


def rounds_frame(view: dict[str, Any]) -> pd.DataFrame:
    """The rounds view as a DataFrame (see `Gateway.rounds_frame`)."""
    rows = []
    for r in view.get("rounds", []):
        row = {
            "round": r["round"],
            "attempt": r["attempt"],
            "phase": r["phase"],
            "participants": len(r.get("participants") or []),
            "samples": r.get("samples"),
            "excluded_subjects": r.get("excluded_subjects"),
            "epsilon_round": r.get("epsilon_round"),
            "epsilon_total": r.get("epsilon_total"),
            "noise_std_on_mean": r.get("noise_std_on_mean"),
            "opened_at": r.get("opened_at"),
            "closed_at": r.get("closed_at"),
            "reason": r.get("reason"),
        }
        evaluation = r.get("evaluation") or {}
        for part, prefix in (("mean_validation", "val_"), ("mean_test", "test_")):
            for metric, value in (evaluation.get(part) or {}).items():
                if isinstance(value, (int, float)) or value is None:
                    row[prefix + metric] = value
        rows.append(row)
    frame = pd.DataFrame(rows)
    for column in ("opened_at", "closed_at"):
        if column in frame:
            frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def statistics_frame(run: dict[str, Any]) -> pd.DataFrame:
    """A released answer as a DataFrame: one row per cell, a column per grouping variable
    (its level, or the bin as `[lo, hi)`), the output checker's `outcome` and `reasons`, and the
    values: `n` and, by statistic, `mean` and `sd`, the histogram bins, the quantile
    estimates or the survival curve. Under differential privacy the values are the noisy ones,
    with `n_half_width_95` the half-width of their 95% interval. Empty until the answer is
    released."""
    answer = run.get("answer")
    if not answer:
        return pd.DataFrame()
    rows = []
    for cell in answer["values"]["cells"]:
        row: dict[str, Any] = {}
        for label in cell.get("labels", []):
            row[label.get("column", "group")] = _label(label)
        row["outcome"] = cell.get("outcome")
        row["reasons"] = ",".join(cell.get("reasons", []))
        value = cell.get("value") or {}
        for key, v in value.items():
            if key == "kind":
                continue
            if isinstance(v, dict) and "value" in v:
                # a noisy value: the estimate and its interval
                row[key] = v["value"]
                row[f"{key}_half_width_95"] = v.get("half_width_95")
            elif isinstance(v, (int, float)) or v is None:
                row[key] = v
            else:
                row[key] = json.dumps(v)
        rows.append(row)
    return pd.DataFrame(rows)


def _label(label: Any) -> Any:
    """A cell label as a plain value: a level, or a bin as `[lo, hi)`."""
    if isinstance(label, dict):
        if label.get("kind") == "level":
            return label["value"]
        if label.get("kind") == "bin":
            close = "]" if label.get("closed_hi") else ")"
            return f"[{label['lo']}, {label['hi']}{close}"
    return json.dumps(label)


def _json_or_raise(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise GatewayError(response.status_code, _problem(response.content))
    return response.json()


def _show(bar: tqdm, study: dict[str, Any]) -> None:
    """Moves the progress bar to a study state: a `study` event or the study view."""
    total = study.get("rounds", study.get("rounds_planned"))
    if total is not None and bar.total != total:
        bar.total = total
    done = study.get("rounds_done")
    if done is not None and done != bar.n:
        bar.n = done
    bar.set_description_str(f"study {study.get('status', '')}".strip())
    eps = study.get("epsilon_spent")
    if eps is not None:
        bar.set_postfix_str(f"epsilon {eps:.3g}")
    bar.refresh()


def _problem(content: bytes) -> dict[str, Any]:
    try:
        body = json.loads(content)
    except ValueError:
        return {"detail": content.decode(errors="replace")[:500]}
    return body if isinstance(body, dict) else {"detail": body}
