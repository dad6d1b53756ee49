"""A real OpenAI-compatible chat-completions server on loopback, for the `openai` policy tests.

Each request is answered by the next behaviour in `server.script` (then by `server.default`):
    "model"        the tiny model generates (chat template + tools, Hermes tool calls parsed into native ones)
    "timeout"      sleeps past the client's timeout before answering
    "429"          rate limited, with Retry-After: 0
    callable       a function of the request body returning the assistant message dict
Every request body is kept in `server.requests`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from training.toolcall_parse import parse_tool_calls


class ChatServer:
    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self.script: list[Any] = []
        self.default: Any = "model"
        self.requests: list[dict[str, Any]] = []
        self.slow_s = 1.5
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    def next_behaviour(self) -> Any:
        with self._lock:
            return self.script.pop(0) if self.script else self.default

    def load(self) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        with self._lock:
            if self._model is None:
                self._tokenizer = AutoTokenizer.from_pretrained(self.model_path)
                self._model = AutoModelForCausalLM.from_pretrained(self.model_path)

    def generate(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        import torch

        from training.sampling import generate

        self.load()
        with self._lock:
            text = self._tokenizer.apply_chat_template(
                body["messages"], tools=body.get("tools"), tokenize=False, add_generation_prompt=True
            )
            ids = self._tokenizer(text, add_special_tokens=False)["input_ids"]
            torch.manual_seed(int(body.get("seed") or 0))
            [(out, logprobs)] = generate(
                self._model, self._tokenizer, [ids], max_new_tokens=int(body.get("max_tokens") or 16), temperature=1.0
            )
        completion = self._tokenizer.decode(out, skip_special_tokens=False).removesuffix(self._tokenizer.eos_token)
        parsed = parse_tool_calls(completion)
        message: dict[str, Any] = {"role": "assistant", "content": completion if parsed.error or not parsed.tool_calls else parsed.message}
        if parsed.tool_calls and not parsed.error:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in parsed.tool_calls
            ]
        tokens = [{"token": f"token_id:{t}", "logprob": lp, "bytes": None, "top_logprobs": []} for t, lp in zip(out, logprobs, strict=True)]
        return message, tokens


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
            except BrokenPipeError:
                return
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # the client gave up waiting (the timeout behaviour): expected
                self.wfile.write(data)

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server.requests.append({**body, "_authorization": self.headers.get("Authorization")})
            behaviour = server.next_behaviour()
            logprobs = None
            if behaviour == "429":
                self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "0"})
                return
            if behaviour == "timeout":
                time.sleep(server.slow_s)
                behaviour = "model"
            if behaviour == "model":
                message, logprobs = server.generate(body)
            else:
                message = behaviour(body)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            self._send(
                200,
                {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": finish,
                            "logprobs": {"content": logprobs} if logprobs is not None else None,
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            )

    return Handler


@pytest.fixture
def chat_server(tiny_path: Any) -> Iterator[tuple[ChatServer, str]]:
    state = ChatServer(str(tiny_path))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def tool_message(name: str, arguments: dict[str, Any], call_id: str = "call_abc") -> Callable[[dict[str, Any]], dict[str, Any]]:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
        }

    return respond


@pytest.fixture
def tool_reply() -> Callable[..., Callable[[dict[str, Any]], dict[str, Any]]]:
    return tool_message
