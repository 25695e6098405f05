"""The researcher's whole flow through the SDK against a live gateway and four nodes: apply,
approval, a two-round study followed over server-sent events, the rounds as a DataFrame, and
the released model with its signed provenance."""

from __future__ import annotations

import json
import struct
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from ehds_sdk import Gateway, GatewayError, ProvenanceError, verify_model

from .conftest import HOSPITALS, REPO

STATES = {"cleveland": "DE", "hungarian": "HU", "switzerland": "AT", "va": "NL"}


def application() -> dict:
    now = datetime.now(timezone.utc)
    return {
        "title": "Federated heart-disease risk model",
        "applicant": {"organisation": "uni-a", "public_body": False},
        "purposes": ["scientific_research"],
        "research_flags": ["algorithm_training"],
        "categories": ["ehr_data"],
        "data_holders": HOSPITALS,
        "member_states": [STATES[h] for h in HOSPITALS],
        "requested_period": {
            "start": now.isoformat().replace("+00:00", "Z"),
            "end": (now + timedelta(days=365)).isoformat().replace("+00:00", "Z"),
        },
        "privacy_budget": {"epsilon": 8.0, "delta": 1e-5, "unit": "record"},
        "justification": "Train a risk model across hospitals without moving any record.",
        "declares_no_prohibited_use": True,
    }


def study(permit_id: str) -> dict:
    features = json.loads((REPO / "examples/federation/heart_disease.features.json").read_text())
    return {
        "title": "Coronary artery disease risk",
        "permit_id": permit_id,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": HOSPITALS,
        "feature_spec": features,
        "model": {"architecture": "logistic"},
        "strategy": {"name": "fedavg"},
        "optimizer": {"name": "sgd", "lr": 0.1},
        "local_steps": 20,
        "batch_size": 8,
        "rounds": 2,
        "min_sites": 4,
        "round_deadline_seconds": 120,
        "dp": {"level": "client", "clip_norm": 1.0, "noise_multiplier": 2.0},
        "seed": 7,
    }


@pytest.fixture(scope="module")
def people(gateway):
    return {
        "researcher": Gateway(gateway.url, gateway.token("alice", "researcher", "uni-a")),
        "officer": Gateway(gateway.url, gateway.token("olaf", "hdab_officer", "hdab-de")),
        "auditor": Gateway(gateway.url, gateway.token("audrey", "auditor", "hdab-de")),
    }


def test_a_refused_request_raises_the_problems_code(people):
    body = application()
    # well-formed for the client, refused by the gateway's rules
    body["requested_period"]["end"] = "2020-01-01T00:00:00Z"
    with pytest.raises(GatewayError) as refused:
        people["researcher"].apply(body)
    assert refused.value.status in (400, 422), refused.value.problem
    assert refused.value.code, refused.value.problem


def test_the_researchers_whole_flow(gateway, people, tmp_path):
    researcher, officer = people["researcher"], people["officer"]

    applied = researcher.apply(application())
    decision = officer.decide(applied.id, {"decision": "approve"})
    permit_id = decision.permit.id
    assert str(officer.permit(permit_id).status) == "active"

    created = researcher.submit_study(study(str(permit_id)))
    study_id = str(created.id)

    seen = []
    final = researcher.wait_for_study(
        study_id, timeout=120, progress=True, on_event=lambda e: seen.append(e)
    )
    assert str(final.status) == "completed", gateway.logs()
    assert final.rounds_done == 2
    # followed over the event stream, not by polling
    kinds = {e.event for e in seen}
    assert {"study", "round", "end"} <= kinds, kinds
    assert [e for e in seen if e.event == "end"][-1].data.strip('"') == "completed"

    frame = researcher.rounds_frame(study_id)
    aggregated = frame[frame["phase"] == "aggregated"]
    assert sorted(aggregated["round"]) == [1, 2]
    assert (aggregated["attempt"] == 1).all()
    assert set(frame["phase"]) <= {"collecting", "aggregated", "discarded", "failed"}
    assert (aggregated["participants"] == 4).all()
    eps = aggregated.sort_values("round")["epsilon_total"].tolist()
    assert all(e > 0 for e in eps) and eps == sorted(eps) and eps[0] < eps[-1]
    assert eps[-1] == pytest.approx(final.epsilon_spent)
    assert aggregated["val_loss"].notna().all()

    key = people["auditor"].verifier_key()
    model = researcher.download_model(study_id, tmp_path / "model.safetensors", verify_key=key)
    assert model.provenance is not None
    assert model.provenance.study == study_id
    assert model.provenance.permit == str(permit_id)
    assert model.provenance.round == model.round
    assert model.provenance.rounds == 2
    assert model.provenance.selection == model.selection
    assert sorted(model.provenance.contributors) == HOSPITALS
    assert model.provenance.epsilon == pytest.approx(final.epsilon_spent)

    data = model.path.read_bytes()
    assert verify_model(data, key) == model.provenance
    # the gateway's own verifier agrees on the same file and key
    cli = subprocess.run(
        [str(gateway.bin), "model", "verify", str(model.path), "--key", key],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert cli.returncode == 0, cli.stderr

    # One flipped bit in the parameters, and the statement no longer names them.
    (header_len,) = struct.unpack("<Q", data[:8])
    tampered = bytearray(data)
    tampered[8 + header_len + 5] ^= 0x01
    with pytest.raises(ProvenanceError, match="parameters"):
        verify_model(bytes(tampered), key)
    (tmp_path / "tampered.safetensors").write_bytes(bytes(tampered))
    cli = subprocess.run(
        [str(gateway.bin), "model", "verify", str(tmp_path / "tampered.safetensors"), "--key", key],
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    assert cli.returncode != 0

    # Another gateway's key (same name, other bytes) does not vouch for it.
    name, _, _ = key.partition("+")
    other = _other_key(name)
    with pytest.raises(ProvenanceError, match="not signed by this key"):
        verify_model(data, other)

    # A download that fails the check leaves no file behind.
    target = tmp_path / "refused.safetensors"
    with pytest.raises(ProvenanceError):
        researcher.download_model(study_id, target, verify_key=other)
    assert not target.exists()


def _other_key(name: str) -> str:
    import base64
    import hashlib

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    key_id = hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4].hex()
    encoded = base64.b64encode(bytes([1]) + public).decode()
    return f"{name}+{key_id}+{encoded}"


def test_wait_for_study_reconnects_and_falls_back_to_polling(people, monkeypatch):
    researcher, officer = people["researcher"], people["officer"]

    def permit() -> str:
        applied = researcher.apply(application())
        return str(officer.decide(applied.id, {"decision": "approve"}).permit.id)

    # The gateway closes every stream after its first event (as it does after five minutes):
    # wait_for_study opens it again until the study is over. Four rounds take the nodes far
    # longer than a reconnection.
    real_events = researcher.events
    connections = []

    def short_streams(study_id):
        connections.append(study_id)
        for event in real_events(study_id):
            yield event
            return

    monkeypatch.setattr(researcher, "events", short_streams)
    body = study(permit())
    body["rounds"] = 4
    first = str(researcher.submit_study(body).id)
    final = researcher.wait_for_study(first, timeout=120, progress=False, poll_interval=30)
    assert str(final.status) == "completed"
    assert final.rounds_done == 4
    assert len(connections) > 1

    # No stream to be had (a gateway or proxy that refuses it): the study is polled.
    def refused(study_id):
        raise GatewayError(404, {"code": "not_found"})
        yield  # a generator, as the real one

    monkeypatch.setattr(researcher, "events", refused)
    second = str(researcher.submit_study(study(permit())).id)
    final = researcher.wait_for_study(second, timeout=120, progress=False, poll_interval=0.2)
    assert str(final.status) == "completed"
    assert final.rounds_done == 2
