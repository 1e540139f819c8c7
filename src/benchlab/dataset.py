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
