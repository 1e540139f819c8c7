"""MariaDB (the MySQL of article 000): a throwaway datadir with its own socket and port."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

import pymysql
from pymysql.converters import escape_string

from benchlab.core.errors import ServiceError
from benchlab.core.service_kinds import Service
from benchlab.hosts.base import Host
from benchlab.http.dataset import users
from benchlab.services.base import (
    HERE,
    Reserved,
    RunningService,
    ServicePlace,
    find_program,
    service_dirs,
    service_error,
    service_user,
    start_listening,
)
from benchlab.services.credentials import new_password, record_password
from benchlab.system.process import ProcessRegistry

DATABASE = "benchlab"
USER = "benchlab"


def dsn(port: int, password: str, address: str) -> str:
    return f"mysql://{USER}:{password}@{address}:{port}/{DATABASE}"


def start_mariadb(
    registry: ProcessRegistry,
    workdir: Path,
    cores: tuple[int, ...],
    max_connections: int,
    place: ServicePlace = HERE,
    reserved: Reserved | None = None,
) -> RunningService:
    host, address = place.host, place.address
    user = service_user("mysql", host)
    # mariadb/run is mysql's (0700: its socket is reached by the mysql user and root only),
    # with its data, its temp directory (the run's TMPDIR may be one the mysql user cannot
    # write), its socket and pid file: root writes nothing there.
    dirs = service_dirs(workdir, Service.MARIADB, user, host)
    run = dirs.config / "run"
    host.make_dir(run, 0o700)
    tmp = run / "tmp"
    host.make_dir(tmp, 0o700, owner=user)
    if user is not None:  # handed over last: until now only root could put anything in it
        host.check(["chown", "-h", f"{user}:", str(run)])
    data, socket = run / "data", run / "mysqld.sock"
    admin_user = host.user_name()
    _install_db(host, data, user, tmp, admin_user)
    program = find_program("mariadbd", host)

    def argv(port: int) -> list[str]:
        return [
            program, "--no-defaults", f"--datadir={data}", f"--tmpdir={tmp}",
            f"--socket={socket}", f"--port={port}", f"--bind-address={','.join(place.listen)}",
            f"--pid-file={run / 'mysqld.pid'}", f"--max-connections={max_connections}",
            # No file reads or writes outside its own data (SELECT ... INTO OUTFILE, LOAD DATA).
            f"--secure-file-priv={data}", "--local-infile=0",
            "--skip-name-resolve", "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0",
            "--innodb-buffer-pool-size=128M",
        ]  # fmt: skip

    admin = SocketAdmin(host, socket, admin_user)
    process, port = start_listening(
        Service.MARIADB, registry, host, argv, lambda _port, _: admin.answers(), cores=cores,
        log_path=dirs.log("mariadb"), user=user, first_port=reserved.port if reserved else None,
    )  # fmt: skip
    password = reserved.password if reserved else new_password()
    record_password(workdir, Service.MARIADB, USER, password)
    admin.execute(_app_user_sql(password, place.admitted) + seed_sql())
    return RunningService(
        name=Service.MARIADB,
        port=port,
        dsn=dsn(port, password, address),
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
    (unix_socket authentication): no account without a password over TCP. Run as the mysql
    user itself: as root with --user, the script would chown what it finds in mysql's
    directory (a link there included)."""
    install = [find_program("mariadb-install-db", host), "--no-defaults", f"--datadir={data}",
               "--auth-root-authentication-method=socket", f"--auth-root-socket-user={admin_user}",
               "--skip-test-db"]  # fmt: skip
    result = host.run(["env", f"TMPDIR={tmp}", *install], timeout=120, user=user)
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
        # An address as ipaddress reads it, escaped too: nothing else reaches this SQL.
        account = f"'{USER}'@'{escape_string(str(ipaddress.IPv4Address(address)))}'"
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
