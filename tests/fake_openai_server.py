"""A scriptable OpenAI-compatible chat server on loopback, for tests.

Real HTTP, so requests go through litellm and the OpenAI SDK exactly as they
would against a hosted provider or a local llama.cpp server: status codes,
error bodies, retries and timeouts are the real ones.

    with FakeOpenAIServer() as server:
        server.script(error(429), error(429), reply("hello"))
        ModelClient("openai/test-model", api_base=server.url, backoff_s=0.01).complete(...)

Replies are served from the script in order; once it is empty, ``responder``
(a function of the request body) answers.

Fault modes beyond status codes: ``hang()`` never answers (until the server
stops), ``echoing_error``/``echoing_reply`` quote the request's Authorization
header back, and ``malformed_reply`` sends message fields of any JSON type.
``model_not_found()`` and ``unauthorized()`` are the setup errors a real
server sends, ``closed_port_url()`` is a base URL nothing listens at, and
``tool_calls_reply`` sends any number of tool calls of any size.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# How long an answer waits for hold_until_in_flight requests: reached only
# when the client sends fewer at once than the test expects.
HOLD_LIMIT_S = 10.0
CONTEXT_LENGTH_MESSAGE = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted "
    "in 9500 tokens. Please reduce the length of the messages."
)


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    delay_s: float = 0.0
    # Sent as raw bytes instead of ``body`` when set: for malformed responses.
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # Never answer: the handler waits until the server stops, then hangs up.
    hang: bool = False
    # The value of this request header replaces "{header}" in the payload.
    echo_header: str | None = None


@dataclass
class SeenRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def reply(
    content: str | None = "ok",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    prompt_tokens: int = 11,
    completion_tokens: int = 3,
    delay_s: float = 0.0,
    finish_reason: str | None = None,
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply(
        200,
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
        delay_s=delay_s,
    )


def tool_call_reply(name: str, arguments: str, call_id: str = "call_fake_1") -> Reply:
    """A tool call; ``arguments`` is sent verbatim, so it may be malformed JSON."""
    return reply(
        None,
        tool_calls=[
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    )


def error(
    status: int,
    message: str = "",
    *,
    code: str | None = None,
    type_: str = "",
    retry_after_ms: int | None = None,
) -> Reply:
    """An error in OpenAI's shape ({"error": {message, type, param, code}})."""
    defaults = {
        400: ("bad request", "invalid_request_error"),
        429: ("Rate limit reached for requests", "requests"),
        500: ("The server had an error while processing your request.", "server_error"),
        503: ("The engine is currently overloaded, please try again later.", "server_error"),
    }
    default_message, default_type = defaults.get(status, ("error", "server_error"))
    return Reply(
        status,
        {
            "error": {
                "message": message or default_message,
                "type": type_ or default_type,
                "param": None,
                "code": code,
            }
        },
        headers={"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {},
    )


def model_not_found(model: str = "test-model") -> Reply:
    """What OpenAI (and llama.cpp, vLLM) send for a model name they do not serve."""
    return error(
        404,
        f"The model `{model}` does not exist or you do not have access to it.",
        code="model_not_found",
        type_="invalid_request_error",
    )


def unauthorized() -> Reply:
    return error(401, "Incorrect API key provided.", code="invalid_api_key")


def closed_port_url() -> str:
    """A loopback base URL where nothing listens: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def tool_calls_reply(*calls: tuple[str, str]) -> Reply:
    """One answer calling every (name, arguments) of ``calls``, sent verbatim."""
    return reply(
        None,
        tool_calls=[
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}}
            for n, (name, args) in enumerate(calls)
        ],
    )


def hang() -> Reply:
    """A request that is never answered (the connection stays open until the server stops)."""
    return Reply(0, {}, hang=True)


def echoing_error(status: int = 401, header: str = "Authorization") -> Reply:
    """An error whose message quotes a request header, as some proxies' errors do."""
    reply_ = error(status, f"Incorrect API key provided: {header}: {{header}}")
    reply_.echo_header = header
    return reply_


def echoing_reply(header: str = "Authorization") -> Reply:
    """A 200 answer that repeats a request header (a model that was shown a key)."""
    reply_ = reply(f"Sure. The request came with {header}: {{header}}.")
    reply_.echo_header = header
    return reply_


def malformed_reply(**message: Any) -> Reply:
    """A 200 whose message has ``message``'s fields verbatim, of any JSON type
    (``content=5``, ``tool_calls="nope"``)."""
    reply_ = reply("placeholder")
    reply_.body["choices"][0]["message"].update(message)
    return reply_


def context_length_error() -> Reply:
    return error(
        400, CONTEXT_LENGTH_MESSAGE, code="context_length_exceeded", type_="invalid_request_error"
    )


def echo_responder(body: dict[str, Any]) -> Reply:
    """Default: repeat the last user message, with usage that grows with the prompt."""
    last_user = last_user_text(body)
    words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    return reply(f"You asked: {last_user}", prompt_tokens=max(words, 1), completion_tokens=4)


@dataclass
class FakeOpenAIServer:
    responder: Callable[[dict[str, Any]], Reply] = echo_responder
    requests: list[SeenRequest] = field(default_factory=list)
    # Most chat requests being answered at the same moment: shows concurrency.
    peak_in_flight: int = 0
    # Hold every answer until this many chat requests have been in flight at
    # once (0: never), HOLD_LIMIT_S at most: a test of concurrency then
    # depends on what the client sends together, not on how fast it sends.
    hold_until_in_flight: int = 0
    _in_flight: int = 0
    _script: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    # Set on stop: hanging handlers hang up.
    _stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._in_flight_rose = threading.Condition(self._lock)

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[SeenRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.responder(body)

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(
                self, status: int, payload: bytes, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # client timed out and left
                    pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    payload = {"object": "list", "data": [{"id": "test-model", "object": "model"}]}
                    self._send(200, json.dumps(payload).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append(SeenRequest(self.path, dict(self.headers), body))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                with server._lock:
                    server._in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server._in_flight)
                    server._in_flight_rose.notify_all()
                    server._in_flight_rose.wait_for(
                        lambda: server.peak_in_flight >= server.hold_until_in_flight,
                        timeout=HOLD_LIMIT_S,
                    )
                try:
                    answer = server._next_reply(body)
                    if answer.delay_s:
                        time.sleep(answer.delay_s)
                    if answer.hang:
                        server._stopping.wait()
                        self.close_connection = True
                        return
                finally:
                    with server._lock:
                        server._in_flight -= 1
                payload = answer.raw if answer.raw is not None else json.dumps(answer.body).encode()
                if answer.echo_header is not None:
                    value = self.headers.get(answer.echo_header) or ""
                    # Escaped for the JSON string it lands in.
                    payload = payload.replace(b"{header}", json.dumps(value)[1:-1].encode())
                self._send(answer.status, payload, answer.headers)

        self._stopping.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True  # a sleeping handler must not block shutdown
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def last_user_text(body: dict[str, Any]) -> str:
    return next(
        (
            str(m.get("content") or "")
            for m in reversed(body.get("messages", []))
            if m.get("role") == "user"
        ),
        "",
    )


_OPS_CHAT = """\
id: {id}
system: You are a helpful assistant for an operations team.
turns:
  - user: Our staging database listens on port 5432.
  - assistant: Noted, port 5432.
  - user: The deploy window is Tuesday morning.
  - assistant: Noted, Tuesday morning.
probes:
"""


def ops_scenario(scenario_id: str, *probes: str) -> str:
    """Scenario YAML for the plugin tests: a short operations chat, then ``probes``
    (each a YAML flow mapping)."""
    return _OPS_CHAT.format(id=scenario_id) + "".join(f"  - {probe}\n" for probe in probes)
