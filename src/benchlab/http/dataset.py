"""The deterministic `user_basic` table, identical in PostgreSQL and MariaDB."""

from __future__ import annotations

USER_COUNT = 10_000
HUI_ID = 4321
HUI_ROLE = "admin"
ROLES = ("member", "editor", "viewer", "admin")


def users() -> list[tuple[int, str, str]]:
    """(id, username, role) rows: user00001 … user10000, with 'hui' at HUI_ID."""
    rows = []
    for user_id in range(1, USER_COUNT + 1):
        if user_id == HUI_ID:
            rows.append((user_id, "hui", HUI_ROLE))
        else:
            rows.append((user_id, f"user{user_id:05d}", ROLES[user_id % len(ROLES)]))
    return rows


# --- the API scenarios' tables (TechEmpower's) ----------------------------------------------

WORLD_COUNT = 10_000
# TechEmpower's fortune table; row 11 is markup (escaping is checked), row 12 is not ASCII.
FORTUNES = (
    (1, "fortune: No such file or directory"),
    (2, "A computer scientist is someone who fixes things that aren't broken."),
    (3, "After enough decimal places, nobody gives a damn."),
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"),
    (5, "A computer program does what you tell it to do, not what you want it to do."),
    (6, "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen"),
    (7, "Any program that runs right is obsolete."),
    (8, "A list is only as strong as its weakest link. — Donald Knuth"),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
    (12, "フレームワークのベンチマーク"),
)
ADDED_FORTUNE = (0, "Additional fortune added at request time.")
GZIP_ITEMS = 100  # the json-gzip document: user rows 1 … 100


def world_number(world_id: int) -> int:
    """The seeded randomNumber of a world row (1 … 10 000): known, so answers can be checked."""
    return world_id * 7919 % WORLD_COUNT + 1


def worlds() -> list[tuple[int, int]]:
    return [(i, world_number(i)) for i in range(1, WORLD_COUNT + 1)]


def gzip_document() -> bytes:
    """The json-gzip scenario's answer before compression: compact JSON, keys in this order."""
    import json

    data = [{"id": i, "username": u, "role": r} for i, u, r in users()[:GZIP_ITEMS]]
    return json.dumps(
        {"code": 0, "message": "ok", "data": data}, separators=(",", ":"), ensure_ascii=False
    ).encode()


def file_name(kb: int) -> str:
    """The static scenario's file of `kb` KiB, as the apps serve it under /static/."""
    return f"{kb}k.bin"


def file_bytes(kb: int) -> bytes:
    """The static scenario's file, and the upload scenario's body: `kb` KiB that do not
    compress (a compressing server gains nothing), the same on every run."""
    import random

    return random.Random(kb).randbytes(kb * 1024)
