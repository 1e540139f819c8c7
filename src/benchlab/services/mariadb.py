"""MariaDB (the MySQL of article 000): a throwaway datadir with its own socket and port."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pymysql
from pymysql.converters import escape_string

from benchlab.dataset import users
from benchlab.errors import ServiceError
from benchlab.hosts.base import Host
from benchlab.process import ProcessRegistry
from benchlab.services.base import (
    HERE,
    RunningService,
    ServicePlace,
    find_program,
    owned_dir,
    service_error,
    service_user,
    wait_until,
)
from benchlab.services.credentials import new_password, record_password
from benchlab.services.ports import free_port

DATABASE = "benchlab"
USER = "benchlab"


def start_mariadb(
    registry: ProcessRegistry,
    workdir: Path,
    cores: tuple[int, ...],
    max_connections: int,
    place: ServicePlace = HERE,
) -> RunningService:
    host, address = place.host, place.address
    user = service_user("mysql", host)
    # 0700: its socket is reached by the mysql user and root only.
    base = owned_dir(workdir / "mariadb", user, host, mode=0o700)
    data = base / "data"
    socket = base / "mysqld.sock"
    # Its own temp directory: the run's TMPDIR may be one the mysql user cannot write.
    tmp = owned_dir(base / "tmp", user, host)
    admin_user = host.user_name()
    _install_db(host, data, user, tmp, admin_user)
    port = free_port()
    argv = [
        find_program("mariadbd", host), "--no-defaults", f"--datadir={data}", f"--tmpdir={tmp}",
        f"--socket={socket}", f"--port={port}", f"--bind-address={','.join(place.listen)}",
        f"--pid-file={base / 'mysqld.pid'}", f"--max-connections={max_connections}",
        # No file reads or writes outside its own data (SELECT ... INTO OUTFILE, LOAD DATA).
        f"--secure-file-priv={data}", "--local-infile=0",
        "--skip-name-resolve", "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0",
        "--innodb-buffer-pool-size=128M",
    ]  # fmt: skip
    process = registry.start(argv, host=host, cores=cores, log_path=base / "mariadb.log", user=user)
    admin = SocketAdmin(host, socket, admin_user)
    wait_until("mariadb", process, admin.answers)
    password = new_password()
    record_password(workdir, "mariadb", USER, password)
    admin.execute(_app_user_sql(password, place.admitted) + seed_sql())
    return RunningService(
        name="mariadb",
        port=port,
        dsn=f"mysql://{USER}:{password}@{address}:{port}/{DATABASE}",
        process=process,
        env={
            "BENCHLAB_MY_HOST": address,
            "BENCHLAB_MY_PORT": str(port),
            "BENCHLAB_MY_PASSWORD": password,
        },
        password=password,
    )


def _install_db(host: Host, data: Path, user: str | None, tmp: Path, admin_user: str) -> None:
    """System tables whose only administrator is benchlab's own OS user, through the socket
    (unix_socket authentication): no account without a password over TCP."""
    install = [find_program("mariadb-install-db", host), "--no-defaults", f"--datadir={data}",
               "--auth-root-authentication-method=socket", f"--auth-root-socket-user={admin_user}",
               "--skip-test-db", *([f"--user={user}"] if user else [])]  # fmt: skip
    result = host.run(["env", f"TMPDIR={tmp}", *install], timeout=120)
    if result.returncode != 0:
        raise service_error(
            "mariadb (install-db)", install, f"exit {result.returncode}", result.stderr.decode()
        )


class SocketAdmin:
    """MariaDB's administrator: the OS user through the socket, with the `mariadb` client run
    on the database's own host (the socket is reached nowhere else)."""

    def __init__(self, host: Host, socket: Path, user: str) -> None:
        self.host = host
        self.argv = ["mariadb", "--no-defaults", f"--socket={socket}", f"--user={user}",
                     "--batch", "--skip-column-names"]  # fmt: skip

    def answers(self) -> bool:
        return self.host.run([*self.argv, "-e", "SELECT 1"], timeout=10).returncode == 0

    def execute(self, statements: str) -> None:
        done = self.host.run(self.argv, input=statements.encode(), timeout=120)
        if done.returncode != 0:
            raise ServiceError(
                f"mariadb: setting up the database failed: {done.stderr.decode().strip()[-500:]}"
            )


def _app_user_sql(password: str, admitted: tuple[str, ...]) -> str:
    """The app's account, from each admitted address: its database only, plus PROCESS for
    the session probe; no FILE."""
    lines = [f"CREATE DATABASE {DATABASE};"]
    for address in admitted:
        account = f"'{USER}'@'{address}'"
        lines += [
            f"CREATE USER {account} IDENTIFIED BY '{escape_string(password)}';",
            f"GRANT ALL ON {DATABASE}.* TO {account};",
            f"GRANT PROCESS ON *.* TO {account};",
        ]
    return "\n".join(lines) + "\n"


def seed_sql() -> str:
    rows = ",".join(
        f"({int(id_)},'{escape_string(name)}','{escape_string(role)}')"
        for id_, name, role in users()
    )
    return (
        f"USE {DATABASE};\n"
        "CREATE TABLE user_basic (id INT AUTO_INCREMENT PRIMARY KEY,"
        " username VARCHAR(64) NOT NULL UNIQUE, role VARCHAR(32) NOT NULL) ENGINE=InnoDB;\n"
        f"INSERT INTO user_basic (id, username, role) VALUES {rows};\n"
        "ANALYZE TABLE user_basic;\n"
    )


def connect(service: RunningService) -> pymysql.connections.Connection:
    return pymysql.connect(
        host=urlsplit(service.dsn).hostname,
        port=service.port,
        user=USER,
        password=service.password,
        database=DATABASE,
        autocommit=True,
        # Bounded: a stalled database must not hang a sample (nor Ctrl-C behind it).
        connect_timeout=5,
        read_timeout=5,
        write_timeout=5,
    )


def open_sessions(conn: pymysql.connections.Connection) -> int:
    """Sessions open on the benchmark database (but this one), idle or not: the stack's
    pools, which grow only when every session they have is busy (see postgres.py)."""
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = %s"
            " AND ID <> CONNECTION_ID()",
            (DATABASE,),
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0
