"""The data layer every Python reference app shares, so that all stacks run the same SQL.

Configured by the environment benchlab sets: BENCHLAB_DB (postgres | mariadb),
BENCHLAB_POOL_SIZE (per worker process), BENCHLAB_PG_HOST/PORT/PASSWORD (PostgreSQL or
pgbouncer), BENCHLAB_PGBOUNCER, BENCHLAB_MY_HOST/PORT/PASSWORD, BENCHLAB_REDIS_URL (its
password included). Queries always bind their parameters; nothing user-supplied is ever
formatted into SQL.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import random
import threading
import time

DB = os.environ.get("BENCHLAB_DB", "postgres")
POOL_SIZE = int(os.environ.get("BENCHLAB_POOL_SIZE", "10"))
PGBOUNCER = os.environ.get("BENCHLAB_PGBOUNCER") == "1"
REDIS_URL = os.environ.get("BENCHLAB_REDIS_URL", "")
CACHE_TTL_S = 180
MAX_MS = 60_000

NOT_FOUND = b'{"code":404,"message":"not found","data":{}}'
BAD_REQUEST = b'{"code":400,"message":"bad request","data":{}}'

# %s placeholders (psycopg, PyMySQL, aiomysql); asyncpg gets $n versions below.
PG_USER = "SELECT id, username, role FROM user_basic WHERE username = %s"
PG_USER_DELAY = "SELECT id, username, role, pg_sleep(%s)::text FROM user_basic WHERE username = %s"
MY_USER = PG_USER
MY_USER_DELAY = "SELECT id, username, role, SLEEP(%s) FROM user_basic WHERE username = %s"
ASYNCPG_USER = "SELECT id, username, role FROM user_basic WHERE username = $1"
ASYNCPG_USER_DELAY = (
    "SELECT id, username, role, pg_sleep($1)::text FROM user_basic WHERE username = $2"
)


# The API scenarios (docs/scenarios.md), PostgreSQL only.
PG_FORTUNES = "SELECT id, message FROM fortune"
PG_WORLD = "SELECT id, randomnumber FROM world WHERE id = %s"
PG_UPDATE_WORLD = "UPDATE world SET randomnumber = %s WHERE id = %s"
ASYNCPG_WORLD = "SELECT id, randomnumber FROM world WHERE id = $1"
ASYNCPG_UPDATE_WORLD = "UPDATE world SET randomnumber = $1 WHERE id = $2"
WORLD_COUNT = 10_000
MAX_QUERIES = 500
ADDED_FORTUNE = (0, "Additional fortune added at request time.")
STATIC_DIR = os.environ.get("BENCHLAB_STATIC_DIR", "")

# TechEmpower's fortunes page, in the syntax Jinja2 and Django templates share.
FORTUNES_TEMPLATE = (
    "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
    "<tr><th>id</th><th>message</th></tr>"
    "{% for id, message in fortunes %}<tr><td>{{ id }}</td><td>{{ message }}</td></tr>"
    "{% endfor %}</table></body></html>"
)

# The json-gzip document: user_basic rows 1 … 100 as seeded (none of them is 'hui').
ROLES = ("member", "editor", "viewer", "admin")
GZIP_DOCUMENT = {
    "code": 0,
    "message": "ok",
    "data": [{"id": i, "username": f"user{i:05d}", "role": ROLES[i % 4]} for i in range(1, 101)],
}


def user_body(row) -> bytes:
    data = {"id": row[0], "username": row[1], "role": row[2]}
    return json.dumps({"code": 0, "message": "ok", "data": data}, separators=(",", ":")).encode()


def parse_ms(value: str | None) -> float | None:
    """Milliseconds from the query string as seconds; None when missing or not a number."""
    if value is None or not value.isdigit() or int(value) > MAX_MS:
        return None
    return int(value) / 1000.0


def parse_queries(value: str | None) -> int:
    """TechEmpower's rule: not a number counts as 1, and the count is kept to 1 … 500."""
    count = int(value) if value is not None and value.isdigit() else 1
    return min(max(count, 1), MAX_QUERIES)


def upload_answer(body: bytes) -> bytes:
    answer = {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    return json.dumps(answer, separators=(",", ":")).encode()


def sorted_fortunes(rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return sorted([*rows, ADDED_FORTUNE], key=lambda row: row[1])


def random_ids(n: int) -> list[int]:
    return [random.randint(1, WORLD_COUNT) for _ in range(n)]


def distinct_ids(n: int) -> list[int]:
    """n different world ids, ascending: rows are locked in id order, so concurrent updates
    cannot deadlock."""
    return sorted(random.sample(range(1, WORLD_COUNT + 1), n))


def world(row) -> dict:
    return {"id": row[0], "randomNumber": row[1]}


def read_worlds(cursor, ids: list[int]) -> list[dict]:
    """One query per id on a DB-API cursor (psycopg, Django's)."""
    worlds = []
    for world_id in ids:
        cursor.execute(PG_WORLD, (world_id,))
        worlds.append(world(cursor.fetchone()))
    return worlds


def renumber(worlds: list[dict]) -> list[tuple[int, int]]:
    """A new random number for each world, in place; the UPDATE's parameters, in id order."""
    for row in worlds:
        row["randomNumber"] = random.randint(1, WORLD_COUNT)
    return [(row["randomNumber"], row["id"]) for row in worlds]


MAX_CPU_US = 1_000_000


def parse_us(value: str | None) -> int | None:
    """Microseconds of CPU to burn, from the query string; None when missing or not a number."""
    if value is None or not value.isdigit() or int(value) > MAX_CPU_US:
        return None
    return int(value)


def burn_cpu(us: int) -> None:
    """Spend `us` microseconds of this thread's CPU time (not wall time: a preempted thread
    still burns exactly that much): the cpu scenario's known cost per request."""
    end = time.thread_time_ns() + us * 1000
    while time.thread_time_ns() < end:
        pass


def _conninfo_value(value: str) -> str:
    """A libpq keyword value, quoted (a password may hold spaces or quotes)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def pg_password() -> str:
    return os.environ.get("BENCHLAB_PG_PASSWORD", "")


def pg_conninfo() -> str:
    host = os.environ.get("BENCHLAB_PG_HOST", "127.0.0.1")
    port = os.environ.get("BENCHLAB_PG_PORT", "5432")
    password = _conninfo_value(pg_password())
    return f"host={host} port={port} user=benchlab password={password} dbname=benchlab"


def mysql_kwargs() -> dict:
    return {
        "host": os.environ.get("BENCHLAB_MY_HOST", "127.0.0.1"),
        "port": int(os.environ.get("BENCHLAB_MY_PORT", "3306")),
        "user": "benchlab",
        "password": os.environ.get("BENCHLAB_MY_PASSWORD", ""),
        "autocommit": True,
    }


def _delay_query(delay_s: float | None, username: str, mysql: bool) -> tuple[str, tuple]:
    if delay_s is None:
        return (MY_USER if mysql else PG_USER), (username,)
    return (MY_USER_DELAY if mysql else PG_USER_DELAY), (delay_s, username)


# --- async: asyncpg / aiomysql / redis.asyncio ---------------------------------------------


class AsyncBackend:
    def __init__(self) -> None:
        self.pg = None
        self.my = None
        self.redis = None

    async def start(self) -> AsyncBackend:
        if DB == "postgres" and "BENCHLAB_PG_PORT" in os.environ:
            import asyncpg

            self.pg = await asyncpg.create_pool(
                host=os.environ["BENCHLAB_PG_HOST"],
                port=int(os.environ["BENCHLAB_PG_PORT"]),
                user="benchlab",
                password=pg_password(),
                database="benchlab",
                min_size=1,  # pools grow on demand: the sessions open are those the load needed
                max_size=POOL_SIZE,
                # Through a transaction-mode pgbouncer (< 1.21) prepared statements cannot be
                # cached (asyncpg FAQ).
                statement_cache_size=0 if PGBOUNCER else 100,
            )
        elif DB == "mariadb" and "BENCHLAB_MY_PORT" in os.environ:
            import aiomysql

            kwargs = mysql_kwargs()
            self.my = await aiomysql.create_pool(
                host=kwargs["host"],
                port=kwargs["port"],
                user=kwargs["user"],
                password=kwargs["password"],
                db="benchlab",
                minsize=1,
                maxsize=POOL_SIZE,
                autocommit=True,
            )
        if REDIS_URL:
            import redis.asyncio

            pool = redis.asyncio.BlockingConnectionPool.from_url(
                REDIS_URL, max_connections=POOL_SIZE
            )
            self.redis = redis.asyncio.Redis(connection_pool=pool)
        return self

    async def user(self, username: str, delay_s: float | None = None):
        if self.pg is not None:
            if delay_s is None:
                return await self.pg.fetchrow(ASYNCPG_USER, username)
            return await self.pg.fetchrow(ASYNCPG_USER_DELAY, delay_s, username)
        if self.my is not None:
            sql, args = _delay_query(delay_s, username, mysql=True)
            async with self.my.acquire() as conn, conn.cursor() as cursor:
                await cursor.execute(sql, args)
                return await cursor.fetchone()
        raise RuntimeError("no database configured (BENCHLAB_DB and its port)")

    def _postgres(self):
        if self.pg is None:
            raise RuntimeError("these scenarios need PostgreSQL (BENCHLAB_DB and its port)")
        return self.pg

    async def fortunes(self) -> list[tuple[int, str]]:
        return [(row[0], row[1]) for row in await self._postgres().fetch(PG_FORTUNES)]

    async def random_worlds(self, n: int) -> list[dict]:
        # Concurrent: each query on a pool connection of its own.
        pg = self._postgres()
        rows = await asyncio.gather(*(pg.fetchrow(ASYNCPG_WORLD, i) for i in random_ids(n)))
        return [world(row) for row in rows]

    async def update_worlds(self, n: int) -> list[dict]:
        pg = self._postgres()
        rows = await asyncio.gather(*(pg.fetchrow(ASYNCPG_WORLD, i) for i in distinct_ids(n)))
        worlds = [world(row) for row in rows]
        async with pg.acquire() as conn, conn.transaction():
            await conn.executemany(ASYNCPG_UPDATE_WORLD, renumber(worlds))
        return worlds

    async def user_body(self, username: str, delay_s: float | None = None) -> bytes | None:
        row = await self.user(username, delay_s)
        return None if row is None else user_body(row)

    async def cached_user_body(self, username: str) -> bytes | None:
        key = f"user:{username}"
        cached = await self.redis.get(key)
        if cached is not None:
            return cached
        body = await self.user_body(username)
        if body is not None:
            await self.redis.set(key, body, ex=CACHE_TTL_S)
        return body


# --- sync: psycopg 3 pool / PyMySQL / redis-py -----------------------------------------------


class _PyMySQLPool:
    """A pool that grows on demand up to `size`: PyMySQL ships none."""

    def __init__(self, size: int) -> None:
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._room = threading.Semaphore(size)  # sessions that may still be opened

    def _connection(self):
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        if self._room.acquire(blocking=False):
            import pymysql

            return pymysql.connect(database="benchlab", **mysql_kwargs())
        return self._idle.get(timeout=30)

    def fetchone(self, sql: str, args: tuple):
        conn = self._connection()
        try:
            with conn.cursor() as cursor:
                cursor.execute(sql, args)
                return cursor.fetchone()
        finally:
            self._idle.put(conn)


class SyncBackend:
    def __init__(self) -> None:
        self.pg = None
        self.my = None
        self.redis = None
        if DB == "postgres" and "BENCHLAB_PG_PORT" in os.environ:
            from psycopg_pool import ConnectionPool

            self.pg = ConnectionPool(
                pg_conninfo(),
                min_size=1,  # it grows when a client has to wait, up to max_size
                max_size=POOL_SIZE,
                open=True,
                # No server-side prepared statements through pgbouncer (< 1.22).
                kwargs={"autocommit": True, "prepare_threshold": None if PGBOUNCER else 5},
            )
            self.pg.wait(timeout=30)
        elif DB == "mariadb" and "BENCHLAB_MY_PORT" in os.environ:
            self.my = _PyMySQLPool(POOL_SIZE)
        if REDIS_URL:
            import redis

            pool = redis.BlockingConnectionPool.from_url(REDIS_URL, max_connections=POOL_SIZE)
            self.redis = redis.Redis(connection_pool=pool)

    def user(self, username: str, delay_s: float | None = None):
        if self.pg is not None:
            sql, args = _delay_query(delay_s, username, mysql=False)
            with self.pg.connection() as conn:
                return conn.execute(sql, args).fetchone()
        if self.my is not None:
            sql, args = _delay_query(delay_s, username, mysql=True)
            return self.my.fetchone(sql, args)
        raise RuntimeError("no database configured (BENCHLAB_DB and its port)")

    def _postgres(self):
        if self.pg is None:
            raise RuntimeError("these scenarios need PostgreSQL (BENCHLAB_DB and its port)")
        return self.pg

    def fortunes(self) -> list[tuple[int, str]]:
        with self._postgres().connection() as conn:
            return [(row[0], row[1]) for row in conn.execute(PG_FORTUNES).fetchall()]

    def random_worlds(self, n: int) -> list[dict]:
        with self._postgres().connection() as conn, conn.cursor() as cursor:
            return read_worlds(cursor, random_ids(n))

    def update_worlds(self, n: int) -> list[dict]:
        with self._postgres().connection() as conn, conn.cursor() as cursor:
            worlds = read_worlds(cursor, distinct_ids(n))
            with conn.transaction():
                cursor.executemany(PG_UPDATE_WORLD, renumber(worlds))
        return worlds

    def user_body(self, username: str, delay_s: float | None = None) -> bytes | None:
        row = self.user(username, delay_s)
        return None if row is None else user_body(row)

    def cached_user_body(self, username: str) -> bytes | None:
        key = f"user:{username}"
        cached = self.redis.get(key)
        if cached is not None:
            return cached
        body = self.user_body(username)
        if body is not None:
            self.redis.set(key, body, ex=CACHE_TTL_S)
        return body


def blocking_sleep(seconds: float) -> None:
    time.sleep(seconds)
