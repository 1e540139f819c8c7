"""MariaDB (the MySQL of article 000): a throwaway datadir with its own socket and port."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pymysql

from benchlab.dataset import users
from benchlab.process import ProcessRegistry
from benchlab.services.base import (
    HOST,
    RunningService,
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
    registry: ProcessRegistry, workdir: Path, cores: tuple[int, ...], max_connections: int
) -> RunningService:
    user = service_user("mysql")
    base = owned_dir(workdir / "mariadb", user)
    base.chmod(0o700)  # its socket: only the mysql user and root reach it
    data = base / "data"
    socket = base / "mysqld.sock"
    # Its own temp directory: the run's TMPDIR may be one the mysql user cannot write.
    tmp = owned_dir(base / "tmp", user)
    _install_db(data, user, tmp)
    port = free_port()
    argv = [
        find_program("mariadbd"), "--no-defaults", f"--datadir={data}", f"--tmpdir={tmp}",
        f"--socket={socket}", f"--port={port}", f"--bind-address={HOST}",
        f"--pid-file={base / 'mysqld.pid'}", f"--max-connections={max_connections}",
        # No file reads or writes outside its own data (SELECT ... INTO OUTFILE, LOAD DATA).
        f"--secure-file-priv={data}", "--local-infile=0",
        "--skip-name-resolve", "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0",
        "--innodb-buffer-pool-size=128M",
    ]  # fmt: skip
    process = registry.start(argv, cores=cores, log_path=base / "mariadb.log", user=user)
    wait_until("mariadb", process, lambda: _answers(socket))
    password = new_password()
    record_password(workdir, "mariadb", USER, password)
    admin = _socket_admin(socket)
    try:
        _create_app_user(admin, password)
        seed(admin)
    finally:
        admin.close()
    return RunningService(
        name="mariadb",
        port=port,
        dsn=f"mysql://{USER}:{password}@{HOST}:{port}/{DATABASE}",
        process=process,
        env={
            "BENCHLAB_MY_HOST": HOST,
            "BENCHLAB_MY_PORT": str(port),
            "BENCHLAB_MY_PASSWORD": password,
        },
        password=password,
    )


def _os_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def _install_db(data: Path, user: str | None, tmp: Path) -> None:
    """System tables whose only administrator is benchlab's own OS user, through the socket
    (unix_socket authentication): no account without a password over TCP."""
    install = [find_program("mariadb-install-db"), "--no-defaults", f"--datadir={data}",
               "--auth-root-authentication-method=socket", f"--auth-root-socket-user={_os_user()}",
               "--skip-test-db", *([f"--user={user}"] if user else [])]  # fmt: skip
    result = subprocess.run(
        install, capture_output=True, text=True, check=False,
        env={**os.environ, "TMPDIR": str(tmp)},
    )  # fmt: skip
    if result.returncode != 0:
        raise service_error(
            "mariadb (install-db)", install, f"exit {result.returncode}", result.stderr
        )


def _socket_admin(socket: Path) -> pymysql.connections.Connection:
    return pymysql.connect(unix_socket=str(socket), user=_os_user(), autocommit=True)


def _answers(socket: Path) -> bool:
    _socket_admin(socket).close()
    return True


def _create_app_user(admin: pymysql.connections.Connection, password: str) -> None:
    """The app's account: its database only, plus PROCESS for the session probe; no FILE."""
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {DATABASE}")
        cursor.execute(f"CREATE USER '{USER}'@'{HOST}' IDENTIFIED BY %s", (password,))
        cursor.execute(f"GRANT ALL ON {DATABASE}.* TO '{USER}'@'{HOST}'")
        cursor.execute(f"GRANT PROCESS ON *.* TO '{USER}'@'{HOST}'")


def seed(conn: pymysql.connections.Connection) -> None:
    with conn.cursor() as cursor:
        cursor.execute(f"USE {DATABASE}")
        cursor.execute(
            "CREATE TABLE user_basic (id INT AUTO_INCREMENT PRIMARY KEY,"
            " username VARCHAR(64) NOT NULL UNIQUE, role VARCHAR(32) NOT NULL) ENGINE=InnoDB"
        )
        cursor.executemany(
            "INSERT INTO user_basic (id, username, role) VALUES (%s, %s, %s)", users()
        )
        cursor.execute("ANALYZE TABLE user_basic")
    conn.commit()


def connect(service: RunningService) -> pymysql.connections.Connection:
    return pymysql.connect(
        host=HOST,
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
