"""Django views: sync under WSGI, async under ASGI (queries through sync_to_async, as the
async ORM itself does). Raw SQL with bound parameters, the same as every other stack.

The API scenarios: /fortunes through Django's template engine (autoescaped), /gzip/json
compressed by gzip_page (GZipMiddleware on that view alone); /static is WhiteNoise's (wsgi.py).
"""

import asyncio
import json
import os
from time import sleep as blocking_sleep

import benchlab_backend as backend
from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.http import HttpResponse
from django.template import engines
from django.views.decorators.gzip import gzip_page

MYSQL = os.environ.get("BENCHLAB_DB") == "mariadb"
REDIS_URL = os.environ.get("BENCHLAB_REDIS_URL", "")
_redis: dict = {}
fortunes_template = engines["django"].from_string(backend.FORTUNES_TEMPLATE)


def _user_body(username: str, delay: float | None) -> bytes | None:
    if delay is None:
        sql, args = (backend.MY_USER if MYSQL else backend.PG_USER), [username]
    else:
        sql, args = (backend.MY_USER_DELAY if MYSQL else backend.PG_USER_DELAY), [delay, username]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        row = cursor.fetchone()
    return None if row is None else backend.user_body(row)


def _fortunes() -> list[tuple[int, str]]:
    with connection.cursor() as cursor:
        cursor.execute(backend.PG_FORTUNES)
        return [(row[0], row[1]) for row in cursor.fetchall()]


def _random_worlds(n: int) -> list[dict]:
    with connection.cursor() as cursor:
        return backend.read_worlds(cursor, backend.random_ids(n))


def _update_worlds(n: int) -> list[dict]:
    with connection.cursor() as cursor:
        worlds = backend.read_worlds(cursor, backend.distinct_ids(n))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(backend.PG_UPDATE_WORLD, backend.renumber(worlds))
    return worlds


def _sync_redis():
    if "sync" not in _redis:
        import redis

        pool = redis.BlockingConnectionPool.from_url(REDIS_URL, max_connections=backend.POOL_SIZE)
        _redis["sync"] = redis.Redis(connection_pool=pool)
    return _redis["sync"]


def _async_redis():
    if "async" not in _redis:
        import redis.asyncio

        pool = redis.asyncio.BlockingConnectionPool.from_url(
            REDIS_URL, max_connections=backend.POOL_SIZE
        )
        _redis["async"] = redis.asyncio.Redis(connection_pool=pool)
    return _redis["async"]


def user_response(body: bytes | None) -> HttpResponse:
    if body is None:
        return HttpResponse(backend.NOT_FOUND, status=404, content_type="application/json")
    return HttpResponse(body, content_type="application/json")


def bad_request() -> HttpResponse:
    return HttpResponse(backend.BAD_REQUEST, status=400, content_type="application/json")


def plaintext(request) -> HttpResponse:
    return HttpResponse(b"Hello, World!", content_type="text/plain")


def json_endpoint(request) -> HttpResponse:
    return json_response({"code": 0, "message": "ok", "data": {}})


def json_response(value) -> HttpResponse:
    return HttpResponse(json.dumps(value, separators=(",", ":")), content_type="application/json")


def fortunes_response(rows: list[tuple[int, str]]) -> HttpResponse:
    page = fortunes_template.render({"fortunes": backend.sorted_fortunes(rows)})
    return HttpResponse(page, content_type="text/html; charset=utf-8")


def upload(request) -> HttpResponse:
    # Under ASGI too: Django has read the whole body before any view runs.
    return HttpResponse(backend.upload_answer(request.body), content_type="application/json")


# --- WSGI: sync views ------------------------------------------------------------------------


def db(request) -> HttpResponse:
    return user_response(_user_body(request.GET.get("username", ""), None))


def db_delay(request) -> HttpResponse:
    delay = backend.parse_ms(request.GET.get("ms"))
    if delay is None:
        return bad_request()
    return user_response(_user_body(request.GET.get("username", ""), delay))


def cache(request, username: str) -> HttpResponse:
    client = _sync_redis()
    key = f"user:{username}"
    cached = client.get(key)
    if cached is not None:
        return user_response(cached)
    body = _user_body(username, None)
    if body is not None:
        client.set(key, body, ex=backend.CACHE_TTL_S)
    return user_response(body)


def sleep(request) -> HttpResponse:
    delay = backend.parse_ms(request.GET.get("ms"))
    if delay is None:
        return bad_request()
    blocking_sleep(delay)
    return HttpResponse(b"ok", content_type="text/plain")


def fortunes(request) -> HttpResponse:
    return fortunes_response(_fortunes())


def queries(request) -> HttpResponse:
    return json_response(_random_worlds(backend.parse_queries(request.GET.get("n"))))


def updates(request) -> HttpResponse:
    return json_response(_update_worlds(backend.parse_queries(request.GET.get("n"))))


@gzip_page
def gzip_json(request) -> HttpResponse:
    return json_response(backend.GZIP_DOCUMENT)


# --- ASGI: async views -----------------------------------------------------------------------


async def async_plaintext(request) -> HttpResponse:
    return plaintext(request)


async def async_json(request) -> HttpResponse:
    return json_endpoint(request)


async def async_db(request) -> HttpResponse:
    return user_response(await sync_to_async(_user_body)(request.GET.get("username", ""), None))


async def async_db_delay(request) -> HttpResponse:
    delay = backend.parse_ms(request.GET.get("ms"))
    if delay is None:
        return bad_request()
    username = request.GET.get("username", "")
    return user_response(await sync_to_async(_user_body)(username, delay))


async def async_cache(request, username: str) -> HttpResponse:
    client = _async_redis()
    key = f"user:{username}"
    cached = await client.get(key)
    if cached is not None:
        return user_response(cached)
    body = await sync_to_async(_user_body)(username, None)
    if body is not None:
        await client.set(key, body, ex=backend.CACHE_TTL_S)
    return user_response(body)


async def async_sleep(request) -> HttpResponse:
    delay = backend.parse_ms(request.GET.get("ms"))
    if delay is None:
        return bad_request()
    await asyncio.sleep(delay)
    return HttpResponse(b"ok", content_type="text/plain")


async def async_fortunes(request) -> HttpResponse:
    return fortunes_response(await sync_to_async(_fortunes)())


async def async_queries(request) -> HttpResponse:
    n = backend.parse_queries(request.GET.get("n"))
    return json_response(await sync_to_async(_random_worlds)(n))


async def async_updates(request) -> HttpResponse:
    n = backend.parse_queries(request.GET.get("n"))
    return json_response(await sync_to_async(_update_worlds)(n))


async def async_upload(request) -> HttpResponse:
    return upload(request)


@gzip_page
async def async_gzip_json(request) -> HttpResponse:
    return json_response(backend.GZIP_DOCUMENT)
