"""JMeter test plans (JMX) for the three WebSocket loads, made from their typed requests
(ws_requests.py) out of JMeter's own thread groups, loops and timers and the luminis
WebSocket samplers (open, request-response, single write, single read): configuration of a
kept tool, not a client of our own. Every frame is sent, read and timed by JMeter.

One JMeter thread holds one connection (the samplers block on their thread's socket). Every
sample is a line of a CSV file (jmeter.py's properties), read back by ws_results.py."""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from benchlab.load.ws_requests import BroadcastRequest, EchoRequest, HoldRequest

# Sample labels: what each line of the results file is.
OPEN = "open"
ECHO = "echo"
HOLD = "hold"
POST = "post"
RECEIVE = "receive"
GOT = "got"  # the JMeter variable a received frame's text is kept in (a CSV column)
LOOP = "messages"  # the loop whose index numbers a connection's messages
_WS = "eu.luminis.jmeter.wssampler."
# Each element's editor in JMeter's GUI: the plan's loader wants one named.
_GUI = {
    "TestPlan": "TestPlanGui", "ThreadGroup": "ThreadGroupGui",
    "LoopController": "LoopControlPanel", "RegexExtractor": "RegexExtractorGui",
    "ResponseAssertion": "AssertionGui", "ConstantThroughputTimer": "TestBeanGUI",
    "ConstantTimer": "ConstantTimerGui",
}  # fmt: skip
Values = dict[str, str | int | float | bool]


def _props(values: Values) -> str:
    out = []
    for name, value in values.items():
        if isinstance(value, bool):
            out.append(f'<boolProp name="{name}">{str(value).lower()}</boolProp>')
        else:
            out.append(f'<stringProp name="{name}">{escape(str(value))}</stringProp>')
    return "".join(out)


def _element(tag: str, name: str, values: Values, children: str = "", raw: str = "") -> str:
    """A JMX element (its properties, then `raw` XML) and the hash tree under it."""
    return (
        f'<{tag} {_classes(tag)} testname="{escape(name)}" enabled="true">'
        f"{_props(values)}{raw}</{tag}><hashTree>{children}</hashTree>"
    )


def _classes(tag: str) -> str:
    gui = _GUI.get(tag, tag + "Gui")
    return f'guiclass="{gui}" testclass="{tag}"'


def _socket(read_timeout_ms: int) -> Values:
    """A sampler on its thread's open connection."""
    return {
        "createNewConnection": False, "server": "", "port": "0", "path": "", "TLS": False,
        "connectTimeout": 5000, "readTimeout": read_timeout_ms,
    }  # fmt: skip


def _open(host: str, port: int, path: str, label: str = OPEN) -> str:
    values: Values = {"server": host, "port": port, "path": path, "TLS": False,
                      "connectTimeout": 5000, "readTimeout": 5000}  # fmt: skip
    return _element(_WS + "OpenWebSocketSampler", label, values)


def _read(label: str, timeout_ms: int, optional: bool, keep: bool) -> str:
    values: Values = {**_socket(timeout_ms), "optional": optional, "dataType": "Text",
                      "binaryPayload": False}  # fmt: skip
    return _element(_WS + "SingleReadWebSocketSampler", label, values, _kept() if keep else "")


def _kept() -> str:
    """The frame's whole text into ${got}, saved beside its sample."""
    return _element(
        "RegexExtractor", "frame",
        {"RegexExtractor.useHeaders": "false", "RegexExtractor.refname": GOT,
         "RegexExtractor.regex": "(?s)^(.*)$", "RegexExtractor.template": "$1$",
         "RegexExtractor.default": "", "RegexExtractor.match_number": "1"},
    )  # fmt: skip


def _loop(name: str, count: int, children: str) -> str:
    values: Values = {"LoopController.continue_forever": False, "LoopController.loops": count}
    return _element("LoopController", name, values, children)


def _thread_group(
    name: str, threads: int, ramp_s: int, children: str, limit_s: int, delay_s: int = 0
) -> str:
    """`threads` threads started over `ramp_s` after `delay_s`, each running `children`
    once; stopped after `limit_s` whatever they are doing (a bound on the run's time)."""
    main = (
        '<elementProp name="ThreadGroup.main_controller" elementType="LoopController" '
        'guiclass="LoopControlPanel" testclass="LoopController" testname="once" enabled="true">'
        + _props({"LoopController.continue_forever": False, "LoopController.loops": 1})
        + "</elementProp>"
    )
    values: Values = {
        "ThreadGroup.on_sample_error": "continue", "ThreadGroup.num_threads": threads,
        "ThreadGroup.ramp_time": ramp_s, "ThreadGroup.scheduler": True,
        "ThreadGroup.duration": limit_s, "ThreadGroup.delay": delay_s,
        "ThreadGroup.same_user_on_next_iteration": True,
    }  # fmt: skip
    return (
        f'<ThreadGroup {_classes("ThreadGroup")} testname="{escape(name)}" enabled="true">'
        f"{main}{_props(values)}</ThreadGroup><hashTree>{children}</hashTree>"
    )


def _plan(groups: str) -> str:
    plan = _props({"TestPlan.functional_mode": False, "TestPlan.serialize_threadgroups": False})
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3"><hashTree>'
        f'<TestPlan {_classes("TestPlan")} testname="benchlab" enabled="true">{plan}</TestPlan>'
        f"<hashTree>{groups}</hashTree></hashTree></jmeterTestPlan>\n"
    )


def message(size: int) -> str:
    """A message of about `size` bytes that names its connection and its number (JMeter
    fills them in), so that each echo is checked against this very message."""
    head = f"m ${{__threadNum}} ${{__jm__{LOOP}__idx}} "
    return head + "x" * max(size - 12, 0)


def _same_text(text: str) -> str:
    """A response assertion: the frame that came back equals `text` (JMeter's `equals`)."""
    strings = (
        f'<collectionProp name="Asserion.test_strings"><stringProp name="0">{escape(text)}'
        "</stringProp></collectionProp>"
    )
    values: Values = {"Assertion.test_field": "Assertion.response_data",
                      "Assertion.test_type": 8, "Assertion.assume_success": False}  # fmt: skip
    return _element("ResponseAssertion", "same text", values, raw=strings)


def _pace(period_ms: float) -> str:
    """JMeter's constant throughput timer, for this thread only: each sample waits until
    `period_ms` after the previous one was due (no wait when it is late)."""
    values: Values = {"calcMode": 0, "throughput": f"{60_000 / period_ms:.6f}"}
    return _element("ConstantThroughputTimer", "pace", values)


def _staggered(period_ms: float, threads: int) -> str:
    """A wait before thread N's first sampler of (N - 1) × period / threads ms: the
    connections' schedules spread evenly over one period, not all due at once. In whole
    milliseconds, by integer arithmetic: ConstantTimer reads its delay as a whole number,
    and a fraction ("7.2") is read as no delay at all, every connection due at once."""
    period_us = round(period_ms * 1000)
    return _element(
        "ConstantTimer",
        "stagger",
        {"ConstantTimer.delay": (
            f"${{__jexl3((${{__threadNum}} - 1) * {period_us} / {threads * 1000})}}"
        )},
    )  # fmt: skip


def echo_plan(request: EchoRequest) -> str:
    """Each of `connections` threads opens a connection (the opens spread over one period),
    then sends `messages` messages, one every `period_ms`, each waiting for its echo, which
    must be the same text. `closed`: no period, each message as soon as the last came back,
    for `duration_s`."""
    text = message(request.message_bytes)
    exchange = _element(
        _WS + "RequestResponseWebSocketSampler", ECHO,
        {**_socket(request.timeout_ms), "binaryPayload": False, "requestData": text,
         "loadDataFromFile": False},
        _same_text(text),
    )  # fmt: skip
    host, port = request.endpoint.host, request.endpoint.port
    if request.closed:
        body = _open(host, port, request.path) + _loop(LOOP, -1, exchange)
        limit = math.ceil(request.duration_s)
    else:
        opening = _element(
            _WS + "OpenWebSocketSampler", OPEN,
            {"server": host, "port": port, "path": request.path, "TLS": False,
             "connectTimeout": 5000, "readTimeout": 5000},
            _staggered(request.period_ms, request.connections),
        )  # fmt: skip
        body = opening + _loop(LOOP, request.messages, _pace(request.period_ms) + exchange)
        seconds = request.period_ms / 1000 + request.warmup_s + request.duration_s
        limit = math.ceil(seconds + request.timeout_ms / 1000) + 10
    return _plan(_thread_group("echo", request.connections, 0, body, limit))


def step_timing(request: HoldRequest) -> tuple[int, int]:
    """Each step's ramp and its whole length, in whole seconds (JMeter's delays are)."""
    ramp = max(1, math.ceil(request.step / request.open_rate))
    return ramp, ramp + max(1, math.ceil(request.settle_s))


def hold_plan(request: HoldRequest) -> str:
    """Step i's `step` threads start i steps after the first, each opening a connection and
    then reading nothing (an optional read) until every step has ended."""
    ramp, length = step_timing(request)
    total = request.steps * length
    groups = []
    for index in range(request.steps):
        wait_ms = (total - index * length + 5) * 1000
        where = (request.endpoint.host, request.endpoint.port, request.path)
        body = _open(*where, f"{OPEN} {index}") + _read(HOLD, wait_ms, optional=True, keep=False)
        groups.append(
            _thread_group(f"step {index}", request.step, ramp, body, total + 10, index * length)
        )
    return _plan("".join(groups))


def broadcast_plan(request: BroadcastRequest) -> str:
    """`receivers` threads join the room and read `rounds` frames each (keeping each frame's
    text); one more joins after them all and posts `rounds` frames, one every
    `interval_ms`, each naming its round."""
    host, port = request.endpoint.host, request.endpoint.port
    join = max(1, math.ceil(request.receivers / request.join_rate))
    rounds = request.rounds + request.warmup_rounds
    span = math.ceil(rounds * request.interval_ms / 1000)
    limit = join + 2 + span + math.ceil(request.timeout_ms / 1000) + 10
    receive = _open(host, port, request.path) + _loop(
        LOOP, rounds, _read(RECEIVE, request.timeout_ms + (join + 2) * 1000, False, True)
    )
    text = f"round ${{__jm__{LOOP}__idx}} " + "x" * max(request.message_bytes - 10, 0)
    post = _element(
        _WS + "SingleWriteWebSocketSampler", POST,
        {**_socket(request.timeout_ms), "binaryPayload": False, "requestData": text,
         "loadDataFromFile": False},
    )  # fmt: skip
    wait = _element("ConstantTimer", "interval", {"ConstantTimer.delay": request.interval_ms})
    sender = _open(host, port, request.path) + _loop(LOOP, rounds, wait + post)
    return _plan(
        _thread_group("receivers", request.receivers, join, receive, limit)
        + _thread_group("sender", 1, 1, sender, limit, delay_s=join + 2)
    )
