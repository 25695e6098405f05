"""The event-stream reader on hand-written streams (the WHATWG `text/event-stream` rules)."""

from ehds_sdk.sse import Event, parse


def test_events_fields_comments_and_multiline_data():
    lines = [
        ": keep-alive",
        "event: study",
        'data: {"rounds_done": 1}',
        "id: 1",
        "",
        "event: round",
        "data:line one",
        "data: line two",
        "",
        "",
        "data: plain",
        "",
    ]
    assert list(parse(lines)) == [
        Event("study", '{"rounds_done": 1}', "1"),
        Event("round", "line one\nline two", "1"),
        Event("message", "plain", "1"),
    ]


def test_an_event_cut_off_by_the_connection_is_dropped():
    assert list(parse(["event: end", 'data: "completed"'])) == []


def test_an_event_without_data_is_not_dispatched():
    assert list(parse(["event: study", "", "event: end", "data: x", ""])) == [Event("end", "x", None)]
