"""Hosts (issue 18): roles on network namespaces and SSH hosts, load from several hosts
merged exactly, nothing left on any host after a run, Ctrl-C or SIGKILL, and one-line
errors for bad [hosts]."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from benchlab.system.journal import journal_dir
from tests.conftest import REPO, benchlab, benchlab_process, error_line, living, write_recipe
from tests.sshd import available, processes_in_namespace, sshd_in_namespace
from tests.test_failures import _children, _stored_trials, _wait_for

NETNS_RECIPE = REPO / "recipes" / "hosts-netns.toml"
NAMESPACES = {"load": "bl-load", "server": "bl-server", "database": "bl-database"}
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def _namespaces() -> set[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def _links() -> list[str]:
    done = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False)
    names = [line.split(":")[1].strip().split("@")[0] for line in done.stdout.splitlines()]
    return [n for n in names if n.startswith(("blbr", "blv"))]


def _left_on_this_machine(pid: int) -> list[str]:
    """What a run (benchlab pid `pid`) could leave: namespaces, links, journal, groups."""
    ours = {*NAMESPACES.values(), "blt-l1", "blt-l2", "blt-server", "bl-load1", "bl-load2"}
    left = [f"namespace {n}" for n in _namespaces() & ours]
    left += [f"link {n}" for n in _links()]
    left += [f"journal {p.name}" for p in journal_dir().glob(f"*-{pid}.json")]
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if root.is_dir():
            left += [f"cgroup {g}" for g in root.glob(f"benchlab-{pid}-*")]
    return left


def _db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    return db


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return error_line(result.stderr)


# --- bad input: exit 2, one line naming the host and the fix --------------------------------

HOSTS_HEAD = """
name = "bad-hosts"
stacks = ["nginx-static"]
scenarios = ["plaintext"]
trials = 1
[[load]]
connections = 8
duration = 1
"""


@pytest.mark.slow
def test_a_role_without_a_host_is_named_with_the_fix(tmp_path: Path) -> None:
    recipe = write_recipe(
        tmp_path,
        HOSTS_HEAD + '[hosts.gen]\nat = "netns:bl-gen"\nroles = ["load"]\ncores = [1]\n',
    )
    line = _one_line_error(benchlab("run", str(recipe), "--dry-run"))
    assert f"{recipe}: key 'hosts': no host has the role 'server'" in line
    assert 'add "server" to the roles of one of them (gen)' in line


@pytest.mark.slow
def test_a_namespace_address_outside_the_benchmarking_range_is_refused(tmp_path: Path) -> None:
    recipe = write_recipe(
        tmp_path,
        HOSTS_HEAD + '[hosts.box]\nat = "netns:bl-box"\naddress = "10.0.0.5"\nroles = ["server"]\n'
        'cores = [0]\n[hosts.gen]\nat = "netns:bl-gen"\nroles = ["load"]\ncores = [1]\n',
    )
    line = _one_line_error(benchlab("run", str(recipe), "--dry-run"))
    assert "key 'hosts.box.address': 10.0.0.5 is outside 198.18.0.0/15" in line
    assert "e.g. 198.18.0.2" in line


@pytest.mark.slow
def test_several_load_hosts_need_a_tool_whose_results_merge(tmp_path: Path) -> None:
    recipe = write_recipe(
        tmp_path,
        HOSTS_HEAD.replace("connections = 8", 'tool = "ab"\nconnections = 8')
        + '[hosts.box]\nat = "local"\nroles = ["server"]\ncores = [0]\n'
        '[hosts.a]\nat = "netns:bl-a"\nroles = ["load"]\ncores = [1]\n'
        '[hosts.b]\nat = "netns:bl-b"\nroles = ["load"]\ncores = [1]\n',
    )
    line = _one_line_error(benchlab("run", str(recipe), "--dry-run"))
    assert "key 'load[0].tool': ab gives percentiles only" in line and "wrk or vegeta" in line


@pytest.mark.alone
@needs_root
@pytest.mark.slow
def test_a_namespace_that_exists_and_is_not_benchlabs_is_refused(tmp_path: Path) -> None:
    subprocess.run(["ip", "netns", "add", "blt-taken"], check=True)
    try:
        recipe = write_recipe(
            tmp_path,
            HOSTS_HEAD + '[hosts.box]\nat = "netns:blt-taken"\nroles = ["server"]\ncores = [0]\n'
            '[hosts.gen]\nat = "local"\nroles = ["load"]\ncores = [1]\n',
        )
        line = _one_line_error(benchlab("run", str(recipe), "--results", str(tmp_path / "r.db")))
    finally:
        subprocess.run(["ip", "netns", "delete", "blt-taken"], check=False)
    assert "key 'hosts.box.at': network namespace 'blt-taken' exists already" in line
    assert "ip netns delete blt-taken" in line
    assert not (tmp_path / "r.db").exists(), "nothing starts"


@pytest.mark.alone
@pytest.mark.slow
def test_a_host_that_cannot_be_reached_is_named_with_the_fix(tmp_path: Path) -> None:
    recipe = write_recipe(
        tmp_path,
        HOSTS_HEAD + '[hosts.box]\nat = "local"\nroles = ["server"]\ncores = [0]\n'
        '[hosts.far]\nat = "ssh://root@127.0.0.1:1"\nroles = ["load"]\ncores = [0]\n',
    )
    line = _one_line_error(benchlab("run", str(recipe), "--results", str(tmp_path / "r.db")))
    assert "key 'hosts.far.at': host 'far' (ssh://root@127.0.0.1:1): cannot connect" in line
    assert "'ssh -p 1 root@127.0.0.1 true' works without a password" in line


# --- the three-namespace recipe -------------------------------------------------------------


def _netns_inode(name: str) -> int | None:
    """The namespace's inode once `ip netns add` has bound it onto its file: the file is
    made first, and sampled in between it is a plain file's inode (seen: 811367)."""
    try:
        found = os.stat(f"/run/netns/{name}")
    except OSError:
        return None
    return found.st_ino if found.st_dev == os.stat("/proc/self/ns/net").st_dev else None


def _net_inode(pid: int) -> int | None:
    try:
        return int(os.readlink(f"/proc/{pid}/ns/net").split("[")[1].rstrip("]"))
    except (OSError, IndexError, ValueError):
        return None


@pytest.mark.alone
@needs_root
@pytest.mark.slow
def test_the_netns_recipe_measures_every_cell_over_the_veth_links(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    results = tmp_path / "r.db"
    seen: set[tuple[int, str, int | None]] = set()  # pid, command line, network namespace
    counters: dict[str, int] = {}
    inodes: dict[str, int] = {}
    with benchlab_process(
        "run", str(NETNS_RECIPE), "--trials", "1", "--duration", "1", "--warmup", "0",
        "--results", str(results),
        "--html", str(tmp_path / "r.html"), env={"TMPDIR": str(isolated_tmp)},
    ) as run:  # fmt: skip
        while run.poll() is None:
            for role, name in NAMESPACES.items():
                inode = None if role in inodes else _netns_inode(name)
                if inode is not None:
                    inodes[role] = inode
            for proc in _children(run.pid):
                try:
                    seen.add((proc.pid, " ".join(proc.cmdline()), _net_inode(proc.pid)))
                except psutil.Error:
                    continue
            # The outer end of the load namespace's veth pair: x0, the first host.
            for direction in ("rx", "tx"):
                path = Path(f"/sys/class/net/blv{run.pid}x0/statistics/{direction}_bytes")
                with contextlib.suppress(OSError, ValueError):
                    counters[direction] = max(counters.get(direction, 0), int(path.read_text()))
            time.sleep(0.1)
        output, _ = run.communicate(timeout=60)
    assert run.returncode == 0, output
    db = _db(results)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "complete", output
    cells = db.execute("SELECT stack, scenario, status, reason FROM cells").fetchall()
    assert len(cells) == 17 and all(c["status"] == "ok" for c in cells), [dict(c) for c in cells]
    hosts = {h["name"]: h for h in db.execute("SELECT * FROM hosts")}
    assert {n: hosts[n]["at"] for n in hosts} == {r: f"netns:{n}" for r, n in NAMESPACES.items()}
    assert hosts["server"]["address"] == "198.18.0.20"
    assert json.loads(hosts["database"]["machine"])["namespace"] == "bl-database"
    # Every response came through the load namespace's veth link.
    trials = db.execute("SELECT bytes, server_cpu_s, cpu_source, requests FROM trials").fetchall()
    received = sum(t["bytes"] for t in trials)
    assert counters.get("tx", 0) >= received > 0, (counters, received)
    shares = db.execute("SELECT host, requests FROM trial_loads").fetchall()
    assert {s["host"] for s in shares} == {"load"}
    assert sum(s["requests"] for s in shares) == sum(t["requests"] for t in trials)

    # Each role ran in its namespace; the server's CPU was counted there (its control group).
    def where(word: str) -> set[int | None]:
        """The namespaces of the processes running `word` (not the wrappers that enter
        them: the control group's shell and `ip netns exec`; nor the probes of the machine
        description, `wrk -v` and `dpkg-query … wrk …`, which run on the controller)."""
        return {
            ns for _, cmd, ns in seen
            if word in cmd and not cmd.startswith(("/bin/sh", "ip ", "setpriv", "dpkg-query"))
            and not cmd.endswith((" -v", " --version", " -V"))
        }  # fmt: skip

    for word, role in (
        ("wrk ", "load"),
        ("/postgres -D", "database"),
        ("gin-", "server"),
        ("nginx -p", "server"),
    ):
        found = [(cmd, ns) for _, cmd, ns in seen if word in cmd and ns != inodes[role]]
        assert where(word) == {inodes[role]}, (inodes, found)  # fmt: skip
    assert all(t["server_cpu_s"] > 0 and t["cpu_source"].startswith("cgroup") for t in trials)
    # Nothing left: namespaces, links, processes, directories.
    assert _left_on_this_machine(run.pid) == []
    pids = {pid for pid, _, _ in seen}
    assert living([psutil.Process(p) for p in pids if psutil.pid_exists(p)]) == []
    assert list(isolated_tmp.iterdir()) == []


@pytest.mark.alone
@needs_root
@pytest.mark.slow
def test_ctrl_c_in_a_netns_run_leaves_nothing(tmp_path: Path, isolated_tmp: Path) -> None:
    results = tmp_path / "r.db"
    with benchlab_process(
        "run", str(NETNS_RECIPE), "--trials", "5", "--duration", "2", "--results", str(results),
        "--html", str(tmp_path / "r.html"), env={"TMPDIR": str(isolated_tmp)},
    ) as run:  # fmt: skip
        _wait_for(lambda: _stored_trials(results) >= 1, 120, "a stored trial")
        everything = _children(run.pid)
        assert _namespaces() >= set(NAMESPACES.values())
        run.send_signal(signal.SIGINT)
        output, _ = run.communicate(timeout=60)
    assert run.returncode == 130, output
    assert _db(results).execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    assert _left_on_this_machine(run.pid) == []
    assert living(everything) == [] and list(isolated_tmp.iterdir()) == []


@pytest.mark.alone
@needs_root
@pytest.mark.slow
def test_doctor_cleans_the_namespaces_of_a_run_killed_with_sigkill(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    results = tmp_path / "r.db"
    with benchlab_process(
        "run", str(NETNS_RECIPE), "--trials", "5", "--duration", "2", "--results", str(results),
        env={"TMPDIR": str(isolated_tmp)},
    ) as run:  # fmt: skip
        _wait_for(lambda: _stored_trials(results) >= 1, 120, "a stored trial")
        everything = _children(run.pid)
        run.kill()
        run.wait(10)
    assert _namespaces() >= set(NAMESPACES.values()), "SIGKILL leaves the namespaces"
    doctor = benchlab("doctor", env={"TMPDIR": str(isolated_tmp)})
    assert "removed 3 network namespace(s)" in " ".join(doctor.stdout.split()), doctor.stdout
    assert _left_on_this_machine(run.pid) == []
    assert living(everything) == [] and list(isolated_tmp.iterdir()) == []
    assert _db(results).execute("SELECT status FROM runs").fetchone()[0] == "abandoned"


# --- two load namespaces sharing a fixed rate -------------------------------------------------


def _exact_percentile(values: list[int], quantile: float) -> int:
    """The value of rank round(quantile % × count), as HdrHistogram ranks (its
    get_target_count_at_percentile), from the sorted values themselves."""
    return values[max(int(quantile * len(values) / 100 + 0.5), 1) - 1]


def _due_corrected_latencies_us(rows: list[list[str]], rate: float) -> list[int]:
    """Each answered request's latency from its due time (the schedule of its own
    generator: request seq due at start + (seq + 1) / rate), in µs."""
    interval = 1e9 / rate
    origin = int(rows[0][0])  # integer nanoseconds first: a float of epoch ns is off by 256
    sends = [(int(r[8]), int(r[0]) - origin, int(r[2]), int(r[1])) for r in rows]
    start = min(sent - (seq + 1) * interval for seq, sent, _, _ in sends)
    return [
        max(1, (latency + max(0, round(sent - start - (seq + 1) * interval))) // 1000)
        for seq, sent, latency, code in sends
        if code != 0
    ]


@pytest.mark.alone
@needs_root
@pytest.mark.slow
def test_two_load_namespaces_share_a_fixed_rate_and_merge_exactly(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    from benchlab.hosts.base import Placement
    from benchlab.hosts.generators import run_generators
    from benchlab.hosts.netns import BenchmarkNetwork, NetnsHost
    from benchlab.http.verify import wait_until_answering
    from benchlab.load import TOOLS, histogram
    from benchlab.load.base import LoadRequest
    from benchlab.load.vegeta import binary
    from benchlab.runner import start_stack
    from benchlab.stacks import CATALOGUE, LaunchContext
    from benchlab.system.process import ProcessRegistry

    server = NetnsHost("server", "blt-server", "198.18.0.20")
    loads = [NetnsHost(f"l{i}", f"blt-l{i}", f"198.18.0.1{i}") for i in (1, 2)]
    network, registry = BenchmarkNetwork(), ProcessRegistry()
    raw = tmp_path / "raw"
    raw.mkdir()
    try:
        network.up([server, *loads])
        ctx = LaunchContext(server.address, 8080, isolated_tmp / "stack", (0,), 1)
        nginx = start_stack(registry, CATALOGUE["nginx-static"], ctx, (0,), host=server)
        assert wait_until_answering(server.address, 8080, nginx.alive, 10) is None
        request = LoadRequest(
            url=f"http://{server.address}:8080/plaintext", connections=32, threads=1,
            duration_s=2, timeout_s=5, cores=(1,), tool="vegeta", rate=2000,
        )  # fmt: skip
        work = isolated_tmp / "load"
        work.mkdir()
        generated = run_generators(
            TOOLS["vegeta"], request, [Placement(h, (1,)) for h in loads], registry, work, raw
        )
    finally:
        registry.stop_all()
        network.down()
    merged, shares = generated.result, generated.shares
    assert [(s.host, s.rate, s.connections) for s in shares] == [("l1", 1000, 16), ("l2", 1000, 16)]
    # The merged count is the sum of the parts, and of what each generator wrote; 2,000
    # req/s for 2 s is a tenth of what one core of vegeta sends, so nearly all 4,000 go out.
    assert merged.requests == sum(s.result.requests for s in shares) >= 3500
    rows = {}
    for share in shares:
        encoded = subprocess.run(
            [str(binary()), "encode", "--to", "csv", str(raw / share.host / "vegeta.bin")],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        rows[share.host] = list(csv.reader(io.StringIO(encoded)))
        assert sum(r[1] != "0" for r in rows[share.host]) == share.result.requests
    files = [str(raw / s.host / "vegeta.bin") for s in shares]
    report = subprocess.run(
        [str(binary()), "report", "-type=json", *files], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(report)["requests"] == sum(len(r) for r in rows.values())
    # The merged percentiles are those of the combined raw results (each request from its
    # own generator's due time), within the histogram's 3 significant digits ...
    combined = sorted(
        latency for share in shares for latency in _due_corrected_latencies_us(
            rows[share.host], share.rate)
    )  # fmt: skip
    assert len(combined) == merged.requests
    for quantile, figure in ((50, merged.latency.p50), (90, merged.latency.p90),
                             (99, merged.latency.p99), (99.9, merged.latency.p999)):  # fmt: skip
        exact = _exact_percentile(combined, quantile) / 1000
        assert exact <= figure <= exact * 1.001 + 0.001, (quantile, exact, figure)
    # ... and exactly those of the generators' histograms merged bin by bin.
    bins = histogram.summary_ms(histogram.merge(s.result.histogram for s in shares))
    assert (bins["p50"], bins["p99"], bins["p999"]) == (
        merged.latency.p50, merged.latency.p99, merged.latency.p999,
    )  # fmt: skip
    # vegeta paces by its own clock (a schedule, not a feedback loop): its sent rate is the
    # rate asked whatever the machine's speed, as long as it is far below its ceiling.
    assert merged.target_rate == 2000 and merged.sent_rate == pytest.approx(2000, rel=0.05)
    assert _left_on_this_machine(os.getpid()) == []


# --- an SSH host --------------------------------------------------------------------------------

SSH_RECIPE = """
name = "ssh-host"
stacks = ["nginx-static", "gin"]
scenarios = ["plaintext", "db"]
trials = 1
warmup = 0
[hosts.remote]
at = "{target}"
roles = ["server", "database"]
cores = [0]
[hosts.here]
at = "local"
roles = ["load"]
cores = [1]
[[load]]
tool = "wrk"
connections = 16
duration = 1
"""


@pytest.mark.alone
@pytest.mark.slow
def test_an_ssh_host_serves_and_keeps_the_database_and_is_left_clean(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    # Never skipped: `./lab test` installs openssh-server (its daemon left stopped).
    assert available() is None, f"cannot start sshd: {available()}"
    results = tmp_path / "r.db"
    # The run's directory has the controller's path on the SSH host (the same files here):
    # its parent must let the services' users through, as /tmp does on any machine.
    isolated_tmp.chmod(0o711)
    with sshd_in_namespace() as sshd:
        recipe = write_recipe(tmp_path, SSH_RECIPE.format(target=sshd.target))
        env = {"TMPDIR": str(isolated_tmp), "BENCHLAB_SSH_CONFIG": str(sshd.config)}
        doctor = benchlab("doctor", "--hosts", str(recipe), env=env)
        run = benchlab("run", str(recipe), "--results", str(results), env=env)
        left_there = [p for p in processes_in_namespace() if p != sshd.pid]
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    checks = " ".join(doctor.stdout.split())
    assert "host remote" in checks and "reach ssh as root" in checks and "clock offset" in checks
    assert "server packages as the controller's" in checks
    assert run.returncode == 0, run.stdout + run.stderr
    db = _db(results)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "complete"
    assert [c["status"] for c in db.execute("SELECT status FROM cells")] == ["ok"] * 3
    remote = db.execute("SELECT * FROM hosts WHERE name = 'remote'").fetchone()
    machine = json.loads(remote["machine"])
    assert remote["at"] == sshd.target and machine["cores"] and machine["kernel"]
    assert json.loads(remote["roles"]) == ["server", "database"]
    services = json.loads(db.execute("SELECT services FROM runs").fetchone()[0])
    assert services["postgresql"]["host"] == "remote"
    assert f"@{sshd.address}:" in services["postgresql"]["dsn"]
    trials = db.execute(
        "SELECT cells.scenario, server_cpu_s, cpu_source, server_rss_mb, db_sessions_peak "
        "FROM trials JOIN cells ON cells.id = trials.cell_id"
    ).fetchall()
    for trial in trials:  # counted there, by a control group made there
        assert trial["server_cpu_s"] > 0 and trial["cpu_source"].startswith("cgroup"), dict(trial)
        assert trial["server_rss_mb"] > 1
    assert next(t["db_sessions_peak"] for t in trials if t["scenario"] == "db") >= 1
    # Nothing left there (but sshd) nor here: processes, its directory, control groups,
    # the master connection.
    assert left_there == []
    assert list(isolated_tmp.iterdir()) == []
    masters = [p for p in psutil.process_iter(["cmdline"]) if "bl-ssh-" in " ".join(
        p.info["cmdline"] or [])]  # fmt: skip
    assert living(masters) == []


@pytest.mark.slow
def test_an_ssh_host_never_writes_through_a_link_it_did_not_make(tmp_path: Path) -> None:
    """The SSH host's own file operations (issue 36): a file is made new (noclobber), never
    through a link planted there, with its mode from its creation; a directory is made new,
    never reused."""
    from benchlab.hosts.base import HostError
    from benchlab.hosts.ssh import SshHost
    from benchlab.recipe.host_spec import parse_spec

    assert available() is None, f"cannot start sshd: {available()}"
    root = Path(tempfile.mkdtemp(prefix="blt-", dir="/tmp"))
    canary = tmp_path / "only-root-writes-this"
    canary.write_text("untouched\n")
    try:
        with sshd_in_namespace() as sshd, pytest.MonkeyPatch.context() as patch:
            patch.setenv("BENCHLAB_SSH_CONFIG", str(sshd.config))
            host = SshHost("remote", parse_spec(sshd.target))
            host.open()
            try:
                rundir = root / "run"
                rundir.mkdir()
                host.make_rundir(rundir)
                (rundir / "planted").symlink_to(canary)
                (rundir / "dangling").symlink_to(tmp_path / "nowhere")
                for name in ("planted", "dangling"):
                    with pytest.raises(HostError):
                        host.write_file(rundir / name, "root's secret")
                    with pytest.raises(HostError):
                        host.make_dir(rundir / name, 0o700)
                assert not (tmp_path / "nowhere").exists()
                host.write_file(rundir / "config", "x=1\n", mode=0o640, group="daemon")
                written = (rundir / "config").stat()
                assert stat.S_IMODE(written.st_mode) == 0o640 and written.st_uid == 0
                with pytest.raises(HostError):
                    host.write_file(rundir / "config", "again")
            finally:
                host.clean_rundir()
                host.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert canary.read_text() == "untouched\n"


# --- each load host's share in the report -----------------------------------------------------


def _share(host: str, requests: int, cpu: float | None, cores: str = "[1]") -> object:
    from benchlab.store import LoadShareRecord

    return LoadShareRecord(
        host=host, machine="this machine", cores=cores, connections=32, rate=None,
        requests=requests, duration_s=1.0, throughput_rps=float(requests), load_cpu_pct=cpu,
        latency_p99_ms=1.0,
    )  # fmt: skip


def test_hosts_sharing_a_saturated_core_are_named_in_the_generator_bound_verdict() -> None:
    from benchlab.analysis.cell_parts import host_shares
    from benchlab.analysis.summary import _name_bound_hosts
    from benchlab.analysis.verdicts import CLIENT_BOUND

    # Two trials: the two generators on one core used 94 % and 96 % of it together.
    shares = host_shares(
        {1: [_share("l1", 600, 50.0), _share("l2", 400, 44.0)],
         2: [_share("l1", 500, 48.0), _share("l2", 500, 48.0)]}
    )  # fmt: skip
    assert [(s.host, s.requests_pct, s.bound) for s in shares] == [
        ("l1", 55.0, True), ("l2", 45.0, True)
    ]  # fmt: skip
    found = _name_bound_hosts([CLIENT_BOUND.says("the load tool used 95% CPU")], shares)
    assert found[0].sentence.endswith(
        "; load hosts 'l1' (49% CPU of cores [1]), 'l2' (46% CPU of cores [1]), sharing their "
        "cores, were the limit"
    ), found[0].sentence
    # On cores of their own, at half a core each, neither is bound, and nothing is named.
    apart = host_shares({1: [_share("l1", 500, 50.0, "[0]"), _share("l2", 500, 50.0)]})
    assert not any(s.bound for s in apart)
    verdict = CLIENT_BOUND.says("x")
    assert _name_bound_hosts([verdict], apart) == [verdict]


@pytest.mark.alone
@needs_root
@pytest.mark.slow
def test_a_run_split_over_two_load_namespaces_reports_each_hosts_share(
    tmp_path: Path, isolated_tmp: Path
) -> None:
    results = tmp_path / "r.db"
    env = {"TMPDIR": str(isolated_tmp)}
    run = benchlab(
        "run", str(REPO / "recipes" / "hosts-two-loads.toml"), "--trials", "1", "--duration",
        "1", "--warmup", "0", "--results", str(results), env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = benchlab("report", "--results", str(results), "--format", "json", env=env)
    data = json.loads(report.stdout)
    assert [h["name"] for h in data["hosts"]] == ["server", "load1", "load2"]
    db = _db(results)
    for cell in data["cells"]:
        shares = cell["load_hosts"]
        assert [(s["host"], s["connections"]) for s in shares] == [("load1", 32), ("load2", 32)]
        assert sum(s["requests_pct"] for s in shares) == pytest.approx(100, abs=0.01)
        assert all(s["load_cpu_pct"] > 0 for s in shares)
        parts = db.execute(
            "SELECT SUM(trial_loads.requests) FROM trial_loads JOIN trials ON trials.id = "
            "trial_loads.trial_id JOIN cells ON cells.id = trials.cell_id WHERE cells.stack = ?"
            " AND cells.scenario = ? AND trials.probe IS NULL",
            (cell["stack"], cell["scenario"]),
        ).fetchone()[0]  # fmt: skip
        assert cell["requests"] == parts > 0
    markdown = benchlab("report", "--results", str(results), "--format", "md", env=env).stdout
    assert "Load hosts (each one's share of the merged figures):" in markdown
    assert "host load2 (netns:bl-load2 198.18.0.12): load" in markdown
    assert _left_on_this_machine(0) == [] and list(isolated_tmp.iterdir()) == []


@pytest.mark.slow
def test_the_port_a_stack_answers_on_is_its_own_by_ss_and_by_psutil_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server verified on its port must be the one listening there (not a process that
    took the port first): the listener's pids, from `ss`, and from psutil where `ss` is
    missing, name the tree that listens and not another."""
    from benchlab.hosts.base import THIS_MACHINE
    from benchlab.system.process import free_port, local_listener_pids

    port = free_port()
    server_argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    server = THIS_MACHINE.start(server_argv, cores=[0], log_path=tmp_path / "server.log")
    other = THIS_MACHINE.start(["sleep", "30"], cores=[0], log_path=tmp_path / "other.log")
    try:
        _wait_for(lambda: bool(local_listener_pids(port)), 10, f"port {port}: {server.log_tail()}")
        by_ss = local_listener_pids(port)
        assert by_ss == {server.pid}
        assert server.listens_on(port) and not other.listens_on(port)
        assert local_listener_pids(free_port()) == set()
        monkeypatch.setenv("PATH", str(tmp_path))  # no `ss`: psutil's answer, the same
        assert local_listener_pids(port) == by_ss
        assert server.listens_on(port) and not other.listens_on(port)
    finally:
        server.stop()
        other.stop()
