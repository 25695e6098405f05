from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.application_view import ApplicationView
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    limit: int | Unset = UNSET,
    offset: int | Unset = UNSET,
    status: str | Unset = UNSET,
    overdue: bool | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["limit"] = limit

    params["offset"] = offset

    params["status"] = status

    params["overdue"] = overdue


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/applications",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | list[ApplicationView] | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in (_response_200):
            response_200_item = ApplicationView.from_dict(response_200_item_data)



            response_200.append(response_200_item)

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | list[ApplicationView]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    offset: int | Unset = UNSET,
    status: str | Unset = UNSET,
    overdue: bool | Unset = UNSET,

) -> Response[Problem | list[ApplicationView]]:
    """ List the applications the caller may see, optionally by state or only the overdue ones.

    Args:
        limit (int | Unset):
        offset (int | Unset):
        status (str | Unset):
        overdue (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[ApplicationView]]
     """


    kwargs = _get_kwargs(
        limit=limit,
offset=offset,
status=status,
overdue=overdue,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    offset: int | Unset = UNSET,
    status: str | Unset = UNSET,
    overdue: bool | Unset = UNSET,

) -> Problem | list[ApplicationView] | None:
    """ List the applications the caller may see, optionally by state or only the overdue ones.

    Args:
        limit (int | Unset):
        offset (int | Unset):
        status (str | Unset):
        overdue (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[ApplicationView]
     """


    return sync_detailed(
        client=client,
limit=limit,
offset=offset,
status=status,
overdue=overdue,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    offset: int | Unset = UNSET,
    status: str | Unset = UNSET,
    overdue: bool | Unset = UNSET,

) -> Response[Problem | list[ApplicationView]]:
    """ List the applications the caller may see, optionally by state or only the overdue ones.

    Args:
        limit (int | Unset):
        offset (int | Unset):
        status (str | Unset):
        overdue (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[ApplicationView]]
     """


    kwargs = _get_kwargs(
        limit=limit,
offset=offset,
status=status,
overdue=overdue,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    offset: int | Unset = UNSET,
    status: str | Unset = UNSET,
    overdue: bool | Unset = UNSET,

) -> Problem | list[ApplicationView] | None:
    """ List the applications the caller may see, optionally by state or only the overdue ones.

    Args:
        limit (int | Unset):
        offset (int | Unset):
        status (str | Unset):
        overdue (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[ApplicationView]
     """


    return (await asyncio_detailed(
        client=client,
limit=limit,
offset=offset,
status=status,
overdue=overdue,

    )).parsed
