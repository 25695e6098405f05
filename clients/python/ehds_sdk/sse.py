"""A minimal reader of server-sent events (the WHATWG `text/event-stream` format).

Enough for the gateway's study events: `event`, `data` (several lines joined by newlines),
`id`, comments; `retry` is ignored because the caller decides when to reconnect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator


@dataclass(frozen=True)
class Event:
    event: str
    data: str
    id: str | None


def parse(lines: Iterable[str]) -> Iterator[Event]:
    """Events from the stream's lines (without their line ends), as each one completes."""
    event, data, last_id = "", [], None
    for line in lines:
        if line == "":
            if data:
                yield Event(event or "message", "\n".join(data), last_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            last_id = value
    # An event not ended by a blank line was cut off with the connection: the format says to
    # drop it.
