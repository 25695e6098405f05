"""An Art. 69 data request through the SDK against a live gateway and four nodes: submitted,
granted, answered by the holders' nodes under output checking, and read as a DataFrame."""

from __future__ import annotations

import json

import pytest

from ehds_sdk import Gateway, GatewayError, statistics_frame

from .conftest import REPO
from .test_researcher_flow import application


def features() -> dict:
    return json.loads((REPO / "examples/federation/heart_disease.features.json").read_text())


def test_a_data_request_is_answered_as_a_dataframe(gateway):
    researcher = Gateway(gateway.url, gateway.token("rosa", "researcher", "uni-a"))
    officer = Gateway(gateway.url, gateway.token("olaf", "hdab_officer", "hdab-de"))
    request = application()
    request["research_flags"] = []
    request["title"] = "Coronary disease by sex across four hospitals"
    submitted = researcher.submit_data_request(
        request,
        feature_spec=features(),
        queries=[
            {
                "statistic": "count",
                "group_by": [
                    {"column": "sex", "levels": [0, 1]},
                    {"column": "coronary_heart_disease", "levels": [0, 1]},
                ],
            },
            {"statistic": "mean", "variable": "age", "bounds": {"lo": 0, "hi": 120}},
        ],
    )
    assert submitted["request"]["kind"] == "data_request"
    decided = officer.decide(submitted["id"], {"decision": "approve"})
    permit_id = str(decided.permit.id)
    runs = researcher.wait_for_statistics(permit_id=permit_id, expected=2, timeout=180)
    assert [r["status"] for r in runs] == ["released", "released"], gateway.logs()

    table = statistics_frame(runs[0])
    assert list(table["sex"]) == [0.0, 0.0, 1.0, 1.0]
    assert list(table["coronary_heart_disease"]) == [0.0, 1.0, 0.0, 1.0]
    assert (table["outcome"] == "released").all()
    assert table["n"].sum() == runs[1]["answer"]["values"]["cells"][0]["value"]["n"]

    mean = statistics_frame(runs[1])
    assert 40 < mean["mean"][0] < 70
    assert mean["sd"][0] > 0

    # only the declared queries run under a data request's permit
    with pytest.raises(GatewayError) as refused:
        researcher.request_statistics(
            permit_id, {"statistic": "count"}, features(), purpose="scientific_research"
        )
    assert refused.value.status == 422
    assert refused.value.problem["code"] == "query_not_declared"
