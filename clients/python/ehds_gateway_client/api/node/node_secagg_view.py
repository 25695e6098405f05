from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.secagg_view import SecaggView
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    id: str,
    *,
    wait: int | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["wait"] = wait


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/node/tasks/{id}/secagg".format(id=quote(str(id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | SecaggView | None:
    if response.status_code == 200:
        response_200 = SecaggView.from_dict(response.json())



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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())



        return response_409

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | SecaggView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    wait: int | Unset = UNSET,

) -> Response[Problem | SecaggView]:
    """ Where the secure aggregation of the task's round stands for the caller, and what the last
    closed stage relayed to it (studies under secure aggregation; docs/secure-aggregation.md).
    With `wait`, answers once the caller is awaited or the stage moved on (the round loop
    wakes the request when it closes a stage), or when the wait ends: a holder that sent its
    message learns of the close at once, without polling.

    Args:
        id (str):
        wait (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SecaggView]
     """


    kwargs = _get_kwargs(
        id=id,
wait=wait,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    wait: int | Unset = UNSET,

) -> Problem | SecaggView | None:
    """ Where the secure aggregation of the task's round stands for the caller, and what the last
    closed stage relayed to it (studies under secure aggregation; docs/secure-aggregation.md).
    With `wait`, answers once the caller is awaited or the stage moved on (the round loop
    wakes the request when it closes a stage), or when the wait ends: a holder that sent its
    message learns of the close at once, without polling.

    Args:
        id (str):
        wait (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SecaggView
     """


    return sync_detailed(
        id=id,
client=client,
wait=wait,

    ).parsed

async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    wait: int | Unset = UNSET,

) -> Response[Problem | SecaggView]:
    """ Where the secure aggregation of the task's round stands for the caller, and what the last
    closed stage relayed to it (studies under secure aggregation; docs/secure-aggregation.md).
    With `wait`, answers once the caller is awaited or the stage moved on (the round loop
    wakes the request when it closes a stage), or when the wait ends: a holder that sent its
    message learns of the close at once, without polling.

    Args:
        id (str):
        wait (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SecaggView]
     """


    kwargs = _get_kwargs(
        id=id,
wait=wait,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    wait: int | Unset = UNSET,

) -> Problem | SecaggView | None:
    """ Where the secure aggregation of the task's round stands for the caller, and what the last
    closed stage relayed to it (studies under secure aggregation; docs/secure-aggregation.md).
    With `wait`, answers once the caller is awaited or the stage moved on (the round loop
    wakes the request when it closes a stage), or when the wait ends: a holder that sent its
    message learns of the close at once, without polling.

    Args:
        id (str):
        wait (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SecaggView
     """


    return (await asyncio_detailed(
        id=id,
client=client,
wait=wait,

    )).parsed
