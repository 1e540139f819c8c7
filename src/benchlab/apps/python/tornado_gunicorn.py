"""Tornado under gunicorn's tornado worker (article 000): the handlers of tornado_app, with
the pools opened lazily on the worker's own IOLoop."""

import asyncio

import benchlab_backend as backend
import tornado.web
from tornado_app import Cache, Db, DbDelay, Json, Plaintext, Sleep


class LazyBackend:
    """Opens the pools on first use, inside the worker's running event loop."""

    def __init__(self) -> None:
        self._backend = None
        self._lock: asyncio.Lock | None = None

    async def get(self) -> backend.AsyncBackend:
        if self._backend is None:
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if self._backend is None:
                    self._backend = await backend.AsyncBackend().start()
        return self._backend

    async def user_body(self, *args):
        return await (await self.get()).user_body(*args)

    async def cached_user_body(self, *args):
        return await (await self.get()).cached_user_body(*args)


app = tornado.web.Application(
    [
        (r"/plaintext", Plaintext),
        (r"/json", Json),
        (r"/db", Db),
        (r"/db-delay", DbDelay),
        (r"/cache/([^/]+)", Cache),
        (r"/sleep", Sleep),
    ],
    db=LazyBackend(),
)
