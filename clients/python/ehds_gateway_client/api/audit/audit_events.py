from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.export_format import ExportFormat
from ...models.outcome import Outcome
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast
import datetime



def _get_kwargs(
    *,
    from_: datetime.datetime | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
    actor: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: Outcome | Unset = UNSET,
    resource_type: str | Unset = UNSET,
    resource_id: str | Unset = UNSET,
    permit_id: str | Unset = UNSET,
    after_seq: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    format_: ExportFormat | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_from_: str | Unset = UNSET
    if not isinstance(from_, Unset):
        json_from_ = from_.isoformat()
    params["from"] = json_from_

    json_to: str | Unset = UNSET
    if not isinstance(to, Unset):
        json_to = to.isoformat()
    params["to"] = json_to

    params["actor"] = actor

    params["action"] = action

    json_outcome: str | Unset = UNSET
    if not isinstance(outcome, Unset):
        json_outcome = outcome.value

    params["outcome"] = json_outcome

    params["resource_type"] = resource_type

    params["resource_id"] = resource_id

    params["permit_id"] = permit_id

    params["after_seq"] = after_seq

    params["limit"] = limit

    json_format_: str | Unset = UNSET
    if not isinstance(format_, Unset):
        json_format_ = format_.value

    params["format"] = json_format_


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/audit/events",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | None:
    if response.status_code == 200:
        response_200 = response.json()
        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())



        return response_404

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())



        return response_408

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())



        return response_429

    if response.status_code == 431:
        response_431 = Problem.from_dict(response.json())



        return response_431

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
    actor: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: Outcome | Unset = UNSET,
    resource_type: str | Unset = UNSET,
    resource_id: str | Unset = UNSET,
    permit_id: str | Unset = UNSET,
    after_seq: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    format_: ExportFormat | Unset = UNSET,

) -> Response[Any | Problem]:
    """ Export audit entries.

    Args:
        from_ (datetime.datetime | Unset):
        to (datetime.datetime | Unset):
        actor (str | Unset):
        action (str | Unset):
        outcome (Outcome | Unset):
        resource_type (str | Unset):
        resource_id (str | Unset):
        permit_id (str | Unset):
        after_seq (int | Unset):
        limit (int | Unset):
        format_ (ExportFormat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
     """


    kwargs = _get_kwargs(
        from_=from_,
to=to,
actor=actor,
action=action,
outcome=outcome,
resource_type=resource_type,
resource_id=resource_id,
permit_id=permit_id,
after_seq=after_seq,
limit=limit,
format_=format_,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
    actor: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: Outcome | Unset = UNSET,
    resource_type: str | Unset = UNSET,
    resource_id: str | Unset = UNSET,
    permit_id: str | Unset = UNSET,
    after_seq: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    format_: ExportFormat | Unset = UNSET,

) -> Any | Problem | None:
    """ Export audit entries.

    Args:
        from_ (datetime.datetime | Unset):
        to (datetime.datetime | Unset):
        actor (str | Unset):
        action (str | Unset):
        outcome (Outcome | Unset):
        resource_type (str | Unset):
        resource_id (str | Unset):
        permit_id (str | Unset):
        after_seq (int | Unset):
        limit (int | Unset):
        format_ (ExportFormat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
     """


    return sync_detailed(
        client=client,
from_=from_,
to=to,
actor=actor,
action=action,
outcome=outcome,
resource_type=resource_type,
resource_id=resource_id,
permit_id=permit_id,
after_seq=after_seq,
limit=limit,
format_=format_,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
    actor: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: Outcome | Unset = UNSET,
    resource_type: str | Unset = UNSET,
    resource_id: str | Unset = UNSET,
    permit_id: str | Unset = UNSET,
    after_seq: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    format_: ExportFormat | Unset = UNSET,

) -> Response[Any | Problem]:
    """ Export audit entries.

    Args:
        from_ (datetime.datetime | Unset):
        to (datetime.datetime | Unset):
        actor (str | Unset):
        action (str | Unset):
        outcome (Outcome | Unset):
        resource_type (str | Unset):
        resource_id (str | Unset):
        permit_id (str | Unset):
        after_seq (int | Unset):
        limit (int | Unset):
        format_ (ExportFormat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
     """


    kwargs = _get_kwargs(
        from_=from_,
to=to,
actor=actor,
action=action,
outcome=outcome,
resource_type=resource_type,
resource_id=resource_id,
permit_id=permit_id,
after_seq=after_seq,
limit=limit,
format_=format_,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
    actor: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: Outcome | Unset = UNSET,
    resource_type: str | Unset = UNSET,
    resource_id: str | Unset = UNSET,
    permit_id: str | Unset = UNSET,
    after_seq: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    format_: ExportFormat | Unset = UNSET,

) -> Any | Problem | None:
    """ Export audit entries.

    Args:
        from_ (datetime.datetime | Unset):
        to (datetime.datetime | Unset):
        actor (str | Unset):
        action (str | Unset):
        outcome (Outcome | Unset):
        resource_type (str | Unset):
        resource_id (str | Unset):
        permit_id (str | Unset):
        after_seq (int | Unset):
        limit (int | Unset):
        format_ (ExportFormat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
     """


    return (await asyncio_detailed(
        client=client,
from_=from_,
to=to,
actor=actor,
action=action,
outcome=outcome,
resource_type=resource_type,
resource_id=resource_id,
permit_id=permit_id,
after_seq=after_seq,
limit=limit,
format_=format_,

    )).parsed
