"""`langgraph dev` serves the memory graph with this package's store, end to end.

Starts the server on a free local port against the repository's langgraph.json (offline,
without --allow-blocking, so any blocking call in the event loop would fail the runs), then
drives it with the langgraph-sdk client: two threads for one user, one for another.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    if cli is None:
        pytest.skip("langgraph-cli[inmem] is not installed")
    try:
        port = _free_port()
    except OSError as exc:
        pytest.skip(f"cannot open a local port: {exc}")
    workdir = tmp_path_factory.mktemp("lgdev")
    env = {**os.environ, "TYPED_MEMORY_DB": str(workdir / "memory.db"),
           "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false"}
    log = open(workdir / "server.log", "w")  # closed in the finally below
    proc = subprocess.Popen(
        [cli, "dev", "--no-browser", "--no-reload", "--port", str(port), "--host", "127.0.0.1"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError((workdir / "server.log").read_text()[-3000:])
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError((workdir / "server.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _say(client, user: str, thread_id: str, text: str) -> dict:
    return client.runs.wait(
        thread_id, "memory_chat",
        input={"messages": [{"role": "user", "content": text}]},
        config={"configurable": {"tenant_id": "acme", "user_id": user}},
    )


def test_two_sessions_and_another_user_through_the_server(server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    first = client.threads.create()["thread_id"]
    out = _say(client, "alice", first, "Please always answer in bullet points.")
    assert [(p["kind"], p["outcome"]) for p in out["memory_trace"]["promotions"]] == [
        ("preference", "written"), ("episode", "written")]  # the setting, then the turn log
    out = _say(client, "alice", first, "I live in Lyon and my dog's name is Rex.")
    assert {p["outcome"] for p in out["memory_trace"]["promotions"]} == {"written"}

    second = client.threads.create()["thread_id"]
    out = _say(client, "alice", second, "Where do I live, and what is my dog called?")
    retrieval = out["memory_trace"]["retrieval"]
    assert len(retrieval["preferences_applied"]) == 1 and len(retrieval["facts_returned"]) >= 2
    prompt = out["memory_prompt"][0]["content"]
    assert "bullet points" in prompt and "Lyon" in prompt and "Rex" in prompt
    assert out["memory_trace"]["degraded"] == []

    other = client.threads.create()["thread_id"]
    out = _say(client, "bob", other, "Where do I live, and what is my dog called?")
    assert out["memory_trace"]["retrieval"]["preferences_applied"] == []
    assert out["memory_trace"]["retrieval"]["facts_returned"] == []
    assert "Lyon" not in out["memory_prompt"][0]["content"]


def test_without_a_user_id_memory_belongs_to_the_thread(server: str) -> None:
    """What an SDK client sends with only `tenant_id` (the server adds `"user_id": ""`)."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)

    def say(thread_id: str, text: str) -> dict:
        return client.runs.wait(
            thread_id, "memory_chat", input={"messages": [{"role": "user", "content": text}]},
            config={"configurable": {"tenant_id": "acme"}})

    first = client.threads.create()["thread_id"]
    out = say(first, "I live in Oslo and my cat's name is Pixel.")
    assert out["memory_trace"]["degraded"] == []
    assert {p["outcome"] for p in out["memory_trace"]["promotions"]} == {"written"}
    assert out["memory_trace"]["user_id"] == f"thread-{first}"
    out = say(first, "What is my cat called?")
    assert "Pixel" in out["memory_prompt"][0]["content"]  # kept for this thread

    second = client.threads.create()["thread_id"]
    out = say(second, "What is my cat called?")
    assert "Pixel" not in out["memory_prompt"][0]["content"]  # not another thread's
    assert out["memory_trace"]["retrieval"]["facts_returned"] == []
