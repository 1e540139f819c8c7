"""JMeter with the luminis WebSocket samplers: the WebSocket load tool (docs/load-tools.md
says why this one). Its three plans are jmeter_plans.py's; what it measured is read back
from its CSV of every sample by ws_results.py.

Built by `benchlab build` (or on first use): Maven copies the pinned jars from Maven Central
(jmeter-home.pom.xml) into benchlab's cache, laid out as a JMeter home (bin/ with JMeter's
configuration and launcher, lib/ the libraries, lib/ext/ JMeter's own jars and the
samplers'). It runs on the machine's Java (Debian's openjdk-17-jre-headless)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from contextlib import AbstractContextManager
from pathlib import Path

from benchlab.core.errors import LoadToolError, UserError
from benchlab.load.base import LoadRequest
from benchlab.load.live import Follow
from benchlab.load.result import LoadResult
from benchlab.system.build_cache import cache_dir, trusted, usable_cache

VERSION = "5.6.3"
SAMPLERS_VERSION = "1.3.1"
POM = Path(__file__).with_name("jmeter-home.pom.xml")
# The SHA-256 of every jar the POM brings (sha256sum's format), as the Go toolchain's is pinned.
JARS = Path(__file__).with_name("jmeter-jars.sha256")
# The Maven plugin that copies the jars, named with its version: Maven would otherwise take
# the newest one Maven Central has.
COPY_GOAL = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
PACKAGES = ("openjdk-17-jre-headless", "maven")
# Every sample a line of CSV: start (epoch ms), elapsed ms, label, code, thread, success,
# and the frame a read kept. Flushed line by line only when watched live (the hold's steps):
# a write a sample costs the tool's one core.
PROPERTIES = {
    "jmeter.save.saveservice.output_format": "csv",
    "jmeter.save.saveservice.timestamp_format": "ms",
    "sampleresult.timestamp.start": "true",
    "sample_variables": "got",
    "jmeter.save.saveservice.print_field_names": "true",
    **{
        f"jmeter.save.saveservice.{name}": "false"
        for name in (
            "response_message", "data_type", "bytes", "sent_bytes", "url", "thread_counts",
            "idle_time", "connect_time", "latency", "assertion_results_failure_message",
        )
    },
    "summariser.name": "",
    "jmeterengine.nongui.port": "0",  # no shutdown listener on a UDP port
}  # fmt: skip
# One thread a connection: small stacks, so that thousands fit; the serial collector, so that
# the JVM keeps to the one core it is pinned to.
JVM_OPTIONS = ("-Xss256k", "-Xms256m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def home() -> Path:
    return cache_dir() / f"jmeter-{VERSION}-ws-{SAMPLERS_VERSION}"


def maven_repository() -> Path:
    """Where Maven keeps what it downloads for the build."""
    return cache_dir() / "maven-repository"


def launcher() -> Path:
    return home() / "bin" / "ApacheJMeter.jar"


def build() -> Path:
    """The JMeter home in benchlab's cache, made once from Maven Central."""
    target = home()
    if trusted(target, tree=True) and launcher().exists():
        return target
    for program in ("java", "mvn"):
        if shutil.which(program) is None:
            raise UserError(
                f"'{program}' is not installed (JMeter needs it): "
                f"apt-get install {' '.join(PACKAGES)}"
            )
    cache = usable_cache()
    shutil.rmtree(target, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        jars = Path(scratch) / "jars"
        command = [
            "mvn", "-B", "-q", f"-Dmaven.repo.local={maven_repository()}",
            "-f", str(POM), COPY_GOAL, f"-DoutputDirectory={jars}",
        ]  # fmt: skip
        try:
            done = subprocess.run(
                command, cwd=scratch, capture_output=True, text=True, timeout=900, check=False,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise UserError("cannot fetch JMeter: Maven took over 15 minutes") from None
        if done.returncode != 0:
            said = (done.stdout + done.stderr).strip()[-1500:]
            raise UserError(f"fetching JMeter {VERSION} with Maven failed:\n{said}")
        check_jars(jars)
        staged = Path(scratch) / "home"
        _lay_out(jars, staged)
        staged.rename(target)
    return target


def pinned_jars() -> dict[str, str]:
    """Every jar the build copies, by name, and its SHA-256 (JARS, kept in the repository)."""
    pairs = (line.split() for line in JARS.read_text().splitlines() if not line.startswith("#"))
    return {name: digest for digest, name in pairs}


def check_jars(jars: Path) -> None:
    """The jars Maven copied are the pinned ones, each by its SHA-256, and no other: one
    that differs (a mirror's, a poisoned local repository's) is refused in one line, before
    any of them is laid out."""
    pinned = pinned_jars()
    copied = {jar.name: jar for jar in jars.glob("*.jar")}
    for name in sorted(set(copied) | set(pinned)):
        if name not in pinned:
            raise UserError(
                f"JMeter's build: Maven copied {name}, which benchlab does not pin ({JARS}); "
                "nothing of it was laid out"
            )
        if name not in copied:
            raise UserError(f"JMeter's build: Maven did not copy {name} (pinned in {JARS})")
        digest = hashlib.sha256(copied[name].read_bytes()).hexdigest()
        if digest != pinned[name]:
            raise UserError(
                f"JMeter's build: {name} is not the pinned jar (SHA-256 {digest}, pinned "
                f"{pinned[name]}): nothing of it was laid out; remove {maven_repository()} if "
                "a bad copy is kept there, and build again"
            )


def _lay_out(jars: Path, staged: Path) -> None:
    """A JMeter home as its own distribution has it."""
    (staged / "lib" / "ext").mkdir(parents=True)
    with zipfile.ZipFile(jars / f"ApacheJMeter_config-{VERSION}.jar") as config:
        for member in config.namelist():
            if member.startswith("bin/") and ".." not in member:
                config.extract(member, staged)
    for jar in sorted(jars.glob("*.jar")):
        if jar.name == f"ApacheJMeter-{VERSION}.jar":
            shutil.copy(jar, staged / "bin" / "ApacheJMeter.jar")
        elif jar.name.startswith("ApacheJMeter_config"):
            continue
        elif jar.name.startswith(("ApacheJMeter_", "jmeter-websocket-samplers")):
            shutil.copy(jar, staged / "lib" / "ext" / jar.name)
        else:
            shutil.copy(jar, staged / "lib" / jar.name)
    (staged / "lib" / "junit").mkdir()  # JMeter's launcher looks for it


def command(plan: Path, results: Path, workdir: Path, live: bool = False) -> list[str]:
    """JMeter without its GUI on a plan, every sample into `results` (`live`: each line
    written as it comes, for a run watched while it runs)."""
    properties = workdir / "benchlab-jmeter.properties"
    chosen = {**PROPERTIES, "jmeter.save.saveservice.autoflush": str(live).lower()}
    properties.write_text("".join(f"{k}={v}\n" for k, v in chosen.items()))
    return [
        "java", *JVM_OPTIONS, "-jar", str(launcher()), "-n", "-t", str(plan),
        "-l", str(results), "-j", str(workdir / "jmeter.log"), "-q", str(properties),
    ]  # fmt: skip


class JMeter:
    """The WebSocket tool: declared with the HTTP tools (TOOLS) for its traits, its build
    and its place in `doctor`; it measures WebSocket loads only (websocket = True), through
    runner/websocket.py, never a LoadRequest."""

    name = "jmeter"
    is_default = False
    install = (
        f"built on its first use from Maven Central (needs apt-get install {' '.join(PACKAGES)});"
        " benchlab build builds it ahead"
    )
    package = None
    pinned_version = f"{VERSION} + jmeter-websocket-samplers {SAMPLERS_VERSION}"
    version_command = ()
    can_pace = True  # its WebSocket messages (jmeter_plans.py's timer), not HTTP
    sends_any_request = False
    protocols: tuple[str, ...] = ("h1",)  # ws:// is an HTTP/1.1 upgrade
    records_each_request = True
    reconnects = False
    merges_exactly = False
    latency_resolution_ms = 1.0  # JMeter times samples in whole milliseconds
    hang_retries = 0
    stops_early = False
    overhead_s = 3.0  # the JVM's start and JMeter's set-up, measured here: 2.5-3.5 s
    websocket = True

    @staticmethod
    def build() -> Path:
        return build()

    def executable(self) -> str | None:
        if shutil.which("java") is None:
            return None
        return str(launcher()) if trusted(home(), tree=True) and launcher().exists() else None

    def program(self) -> str:
        return str(launcher())

    def threads_for(self, asked: int | None, connections: int, load_cores: int) -> int:
        return connections  # a thread a connection

    def command(self, request: LoadRequest, workdir: Path) -> list[str]:
        raise LoadToolError("jmeter loads WebSocket endpoints only (the ws-* scenarios)")

    def parse(self, output: str, request: LoadRequest, workdir: Path) -> LoadResult:
        raise LoadToolError("jmeter loads WebSocket endpoints only (the ws-* scenarios)")

    def merge(self, parts: list[tuple[LoadRequest, Path]], results: list[LoadResult]) -> LoadResult:
        raise LoadToolError("jmeter runs from one load host")

    def follower(
        self, request: LoadRequest, workdir: Path, follow: Follow
    ) -> AbstractContextManager[object] | None:
        return None  # never a LoadRequest's tool
