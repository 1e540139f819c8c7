"""MariaDB (the MySQL of article 000): a throwaway datadir with its own socket and port."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pymysql

from benchlab.dataset import users
from benchlab.process import ProcessRegistry
from benchlab.services.base import HOST, RunningService, find_program, service_error, wait_until
from benchlab.services.ports import free_port

DATABASE = "benchlab"
USER = "benchlab"
PASSWORD = "benchlab"


def start_mariadb(
    registry: ProcessRegistry, workdir: Path, cores: tuple[int, ...], max_connections: int
) -> RunningService:
    base = workdir / "mariadb"
    base.mkdir(parents=True)
    data = base / "data"
    socket = base / "mysqld.sock"
    run_as = ["--user=root"] if os.geteuid() == 0 else []
    install = [find_program("mariadb-install-db"), "--no-defaults", f"--datadir={data}",
               "--auth-root-authentication-method=normal", "--skip-test-db", *run_as]  # fmt: skip
    result = subprocess.run(install, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise service_error(
            "mariadb (install-db)", install, f"exit {result.returncode}", result.stderr
        )
    port = free_port()
    argv = [
        find_program("mariadbd"), "--no-defaults", f"--datadir={data}", *run_as,
        f"--socket={socket}", f"--port={port}", f"--bind-address={HOST}",
        f"--pid-file={base / 'mysqld.pid'}", f"--max-connections={max_connections}",
        "--skip-name-resolve", "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0",
        "--innodb-buffer-pool-size=128M",
    ]  # fmt: skip
    process = registry.start(argv, cores=cores, log_path=base / "mariadb.log")
    wait_until("mariadb", process, lambda: _answers(socket))
    root = pymysql.connect(unix_socket=str(socket), user="root", autocommit=True)
    try:
        with root.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {DATABASE}")
            cursor.execute(f"CREATE USER '{USER}'@'{HOST}' IDENTIFIED BY '{PASSWORD}'")
            cursor.execute(f"GRANT ALL ON {DATABASE}.* TO '{USER}'@'{HOST}'")
            cursor.execute(f"GRANT PROCESS ON *.* TO '{USER}'@'{HOST}'")
        seed(root)
    finally:
        root.close()
    return RunningService(
        name="mariadb",
        port=port,
        dsn=f"mysql://{USER}:{PASSWORD}@{HOST}:{port}/{DATABASE}",
        process=process,
        env={"BENCHLAB_MY_HOST": HOST, "BENCHLAB_MY_PORT": str(port)},
    )


def _answers(socket: Path) -> bool:
    conn = pymysql.connect(unix_socket=str(socket), user="root", connect_timeout=2)
    conn.close()
    return True


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


def connect(port: int) -> pymysql.connections.Connection:
    return pymysql.connect(
        host=HOST, port=port, user=USER, password=PASSWORD, database=DATABASE, autocommit=True
    )


def active_sessions(conn: pymysql.connections.Connection) -> int:
    """Sessions of the benchmark database busy right now (not idle, not this one): a text
    query shows as 'Query', a prepared one (go-sql-driver, aiomysql) as 'Execute'."""
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = %s"
            " AND COMMAND <> 'Sleep' AND ID <> CONNECTION_ID()",
            (DATABASE,),
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0
