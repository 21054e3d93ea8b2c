"""Loopback HTTP servers that speak OpenAI's and Gemini's REST APIs, scripted by the test."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the fake provider answers: text and/or tool calls, or a raw HTTP status."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"name", "args"}
    raw_arguments: str | None = None  # send this exact (possibly broken) JSON as arguments
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # replaces the whole JSON body when set (bytes: sent as they are)
    delay_s: float = 0.0
    hang: bool = False  # accept the request and never answer
    chunk_delay_s: float = 0.0  # when streaming, wait this long before each chunk
    finish_reason: str | None = None
    usage: dict[str, int] | None = None  # OpenAI usage to report; a small fixed one if None


Brain = Callable[[dict[str, Any]], Reply]


def echo_brain(request: dict[str, Any]) -> Reply:
    """Calls the first offered tool once, then answers with what the tool returned."""
    last = _last_message(request)
    if last.get("kind") == "tool":
        return Reply(text=f"The tool says: {last['text']}")
    return Reply(text=f"You said: {last.get('text', '')}")


def _last_message(request: dict[str, Any]) -> dict[str, Any]:
    if "messages" in request:
        message = request["messages"][-1]
        kind = "tool" if message.get("role") == "tool" else message.get("role")
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        return {"kind": kind, "text": content or ""}
    content = request["contents"][-1]
    for part in content.get("parts", []):
        if "functionResponse" in part:
            return {"kind": "tool", "text": json.dumps(part["functionResponse"].get("response"))}
        if "text" in part:
            return {"kind": "user", "text": part["text"]}
    return {"kind": "user", "text": ""}


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up mid-reply (timeouts under test) are expected


class LoopbackServer:
    """A threaded server on 127.0.0.1; records every request body it receives."""

    def __init__(self, brain: Brain = echo_brain):
        self.brain = brain
        self.requests: list[dict[str, Any]] = []
        self.sizes: list[int] = []  # each request body's length in bytes
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._hung = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.sizes.append(length)
                    server.paths.append(self.path)
                reply = server.brain(body)
                if reply.hang:
                    server._hung.wait(600)
                    return
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                server.respond(self, body, reply)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hung.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def respond(self, handler: BaseHTTPRequestHandler, request: dict[str, Any],
                reply: Reply) -> None:
        raise NotImplementedError

    @staticmethod
    def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any,
                  headers: dict[str, str]) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def send_sse(handler: BaseHTTPRequestHandler, events: list[str], delay_s: float = 0.0) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        for event in events:
            time.sleep(delay_s)
            handler.wfile.write(f"data: {event}\n\n".encode())
            handler.wfile.flush()
        handler.close_connection = True


class OpenAIServer(LoopbackServer):
    """Speaks /v1/chat/completions, plain JSON and server-sent events."""

    def respond(self, handler: BaseHTTPRequestHandler, request: dict[str, Any],
                reply: Reply) -> None:
        if reply.status != 200 or reply.body is not None:
            error = {"error": {"message": "scripted failure", "type": "server_error"}}
            self.send_json(handler, reply.status, reply.body or error, reply.headers)
            return
        calls = [{"id": f"call_{uuid.uuid4().hex[:10]}", "type": "function",
                  "function": {"name": c["name"],
                               "arguments": reply.raw_arguments
                               if reply.raw_arguments is not None else json.dumps(c["args"])}}
                 for c in reply.tool_calls]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        usage = reply.usage or {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        model = request.get("model", "gpt-test")
        if request.get("stream"):
            events = [json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": model,
                                  "choices": [{"index": 0, "delta": {"role": "assistant"}}]})]
            for word in reply.text.split(" ") if reply.text else []:
                events.append(json.dumps({"id": "c1", "object": "chat.completion.chunk",
                                          "model": model, "choices": [{
                                              "index": 0, "delta": {"content": word + " "}}]}))
            for i, call in enumerate(calls):
                events.append(json.dumps({"id": "c1", "object": "chat.completion.chunk",
                                          "model": model, "choices": [{"index": 0, "delta": {
                                              "tool_calls": [{**call, "index": i}]}}]}))
            events.append(json.dumps({"id": "c1", "object": "chat.completion.chunk",
                                      "model": model, "choices": [{
                                          "index": 0, "delta": {}, "finish_reason": finish}]}))
            events.append(json.dumps({"id": "c1", "object": "chat.completion.chunk",
                                      "model": model, "choices": [], "usage": usage}))
            events.append("[DONE]")
            self.send_sse(handler, events, reply.chunk_delay_s)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        self.send_json(handler, 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
            "model": model, "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }, reply.headers)


class GeminiServer(LoopbackServer):
    """Speaks /v1beta/models/<model>:generateContent (and :streamGenerateContent?alt=sse)."""

    def respond(self, handler: BaseHTTPRequestHandler, request: dict[str, Any],
                reply: Reply) -> None:
        if reply.status != 200 or reply.body is not None:
            error = {"error": {"code": reply.status, "message": "scripted failure",
                               "status": "UNAVAILABLE"}}
            self.send_json(handler, reply.status, reply.body or error, reply.headers)
            return
        parts: list[dict[str, Any]] = []
        if reply.text:
            parts.append({"text": reply.text})
        parts.extend({"functionCall": {"name": c["name"], "args": c["args"]}}
                     for c in reply.tool_calls)
        payload = {
            "candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": reply.finish_reason or "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7,
                              "totalTokenCount": 18},
            "modelVersion": "gemini-test",
        }
        if "stream" in handler.path.lower():
            self.send_sse(handler, [json.dumps(payload)])
            return
        self.send_json(handler, 200, payload, reply.headers)


class TavilyServer(LoopbackServer):
    """Speaks Tavily's POST /search: the brain's Reply.body is the JSON answer."""

    def respond(self, handler: BaseHTTPRequestHandler, request: dict[str, Any],
                reply: Reply) -> None:
        if reply.status != 200:
            self.send_json(handler, reply.status, {"detail": {"error": "scripted failure"}},
                           reply.headers)
            return
        body = reply.body if reply.body is not None else {"results": []}
        self.send_json(handler, 200, {"query": request.get("query", ""), "images": [],
                                      "response_time": 0.01, **body}, reply.headers)


def tool_then_answer(tool: str, args: dict[str, Any]) -> Brain:
    """Ask for one tool call, then answer with the tool's result."""

    def brain(request: dict[str, Any]) -> Reply:
        last = _last_message(request)
        if last["kind"] == "tool":
            return Reply(text=f"Done. The tool returned: {last['text']}")
        return Reply(tool_calls=[{"name": tool, "args": args}])

    return brain


def scripted(*replies: Reply | Callable[[dict[str, Any]], Reply]) -> Brain:
    """Answer with these replies in order, repeating the last one."""
    queue = list(replies)
    lock = threading.Lock()

    def brain(request: dict[str, Any]) -> Reply:
        with lock:
            item = queue.pop(0) if len(queue) > 1 else queue[0]
        return item(request) if callable(item) else item

    return brain
