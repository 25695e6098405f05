"""The HDAB's bulk import of Art. 71 opt-outs through the SDK, against the live gateway. The
pseudonyms are not the example hospitals' patients, so the studies of the other tests keep
their cohorts."""

from __future__ import annotations

import pytest

from ehds_sdk import Gateway, GatewayError


def subject(n: int) -> str:
    return f"psn-sdk-import-{n:04}"


def consent(n: int, status: str) -> dict:
    return {
        "fullUrl": f"urn:uuid:sdk-consent-{n}",
        "resource": {
            "resourceType": "Consent",
            "id": f"sdk-consent-{n}",
            "status": status,
            "scope": {"coding": [{
                "system": "http://terminology.hl7.org/CodeSystem/consentscope",
                "code": "research",
            }]},
            "patient": {"identifier": {"system": "urn:pseudonym", "value": subject(n)}},
            "provision": {"type": "deny", "period": {"start": "2026-01-01T00:00:00Z"}},
        },
    }


@pytest.fixture(scope="module")
def registrar(gateway):
    return Gateway(gateway.url, gateway.token("reg-1", "optout_registrar", "hdab-de"))


def test_ndjson_imports_are_all_or_nothing_and_idempotent(registrar):
    records = [
        {"subject_pseudonym": subject(1), "id": "sdk-1"},
        {"subject_pseudonym": subject(2), "member_state": "HU", "id": "sdk-2"},
        {"subject_pseudonym": subject(2), "withdrawn": True},
    ]
    first = registrar.import_opt_outs(records, channel="sdk")
    assert (first["registered"], first["withdrawn"], first["unchanged"]) == (2, 1, 0)
    again = registrar.import_opt_outs(records, channel="sdk")
    assert (again["registered"], again["unchanged"]) == (0, 3)
    assert again["registry_version"] == first["registry_version"]

    # one bad line refuses all of it: the good line before it is not registered either
    bad = f'{{"subject_pseudonym": "{subject(3)}"}}\n{{"subject_pseudonym": "19850101-1234-5678"}}\n'
    with pytest.raises(GatewayError) as refused:
        registrar.import_opt_outs(bad)
    assert (refused.value.status, refused.value.code) == (422, "identifier_not_pseudonymous")
    assert refused.value.problem["errors"][0]["field"] == "line 2: subject_pseudonym"
    after = registrar.import_opt_outs([{"subject_pseudonym": subject(3)}])
    assert after["registered"] == 1


def test_a_fhir_bundle_of_consent_registers_and_withdraws(registrar):
    bundle = {"resourceType": "Bundle", "type": "collection",
              "entry": [consent(20, "active"), consent(21, "active")]}
    report = registrar.import_opt_outs(bundle)
    assert report["registered"] == 2
    withdrawal = {"resourceType": "Bundle", "type": "collection",
                  "entry": [consent(21, "inactive")]}
    assert registrar.import_opt_outs(withdrawal)["withdrawn"] == 1
    with pytest.raises(ValueError):
        registrar.import_opt_outs({"resourceType": "Patient"})


def test_only_a_registrar_may_import(gateway):
    researcher = Gateway(gateway.url, gateway.token("alice", "researcher", "uni-a"))
    with pytest.raises(GatewayError) as refused:
        researcher.import_opt_outs([{"subject_pseudonym": subject(9)}])
    assert refused.value.status == 403
