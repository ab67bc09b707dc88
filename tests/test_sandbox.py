"""Smoke runs against the real Docker engine and the real base image (scripts/sandbox-engine.sh),
and in local mode. Each attack from the sandbox recipe is made for real and must be held."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import docker
import pytest

from paperlens.pipeline import sandbox
from paperlens.pipeline.sandbox import docker_run, images
from paperlens.pipeline.sandbox.output import CappedOutput
from paperlens.schemas.smoke import DEFAULT_SANDBOX_IMAGE, SandboxSettings

from .conftest import containers_left_behind, my_containers, needs_docker


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)  # the container's user (nobody) reads it through the bind mount
    return ws


def _settings(**changes) -> SandboxSettings:
    return SandboxSettings(**({"timeout_seconds": 30.0} | changes))


def _run(workspace: Path, script: str, *, warm: bool = True, **changes):
    """Runs `python3 -c script`; `warm` makes the container ahead of time first, as after a save."""
    settings = _settings(command=["python3", "-c", textwrap.dedent(script)], **changes)
    if warm:
        assert sandbox.prepare(workspace, settings) is None
        sandbox.drain()
    return sandbox.run_smoke(workspace, settings)


# --------------------------------------------------------------------------------------------
# Isolation
# --------------------------------------------------------------------------------------------


@needs_docker
@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "parked"])
def test_the_workspace_is_read_only_and_scratch_is_writable(workspace, warm):
    (workspace / "data.txt").write_text("kept\n")
    result = _run(
        workspace,
        """
        import os
        print("user", os.getuid(), os.getgid(), "home", os.environ["HOME"])
        print("image", os.environ["PAPERLENS_IMAGE_DIGEST"])
        open("/tmp/scratch.txt", "w").write("ok")
        print("scratch", open("/tmp/scratch.txt").read())
        print("data", open("data.txt").read().strip())
        for target in ("written.txt", "data.txt", "/etc/evil", "/usr/evil"):
            try:
                open(target, "w").write("x")
                print("WROTE", target)
            except OSError as err:
                print("refused", target, err.errno)
        """,
        warm=warm,
    )
    assert result.status == "passed", result.output
    assert result.isolated and result.mode == "docker" and result.image == DEFAULT_SANDBOX_IMAGE
    assert "user 65534 65534 home /tmp" in result.output
    # The run knows the image it ran in by its content digest, for its record (environment.json).
    assert f"image {docker.from_env().images.get(DEFAULT_SANDBOX_IMAGE).id}" in result.output
    assert "scratch ok" in result.output and "data kept" in result.output
    assert "WROTE" not in result.output
    assert result.output.count("refused") == 4 and "refused written.txt 30" in result.output  # EROFS
    assert sorted(path.name for path in workspace.iterdir()) == ["data.txt"]
    assert (workspace / "data.txt").read_text() == "kept\n"
    assert not containers_left_behind()


@needs_docker
@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "parked"])
def test_the_network_is_unreachable(workspace, warm):
    result = _run(
        workspace,
        """
        import socket
        for host in ("1.1.1.1", "8.8.8.8"):
            try:
                socket.create_connection((host, 53), timeout=3)
                print("CONNECTED", host)
            except OSError as err:
                print("unreachable", host, err.errno)
        """,
        warm=warm,
    )
    assert "CONNECTED" not in result.output
    assert "unreachable 1.1.1.1 101" in result.output  # ENETUNREACH, at once
    assert result.duration_seconds < 3


@needs_docker
def test_an_allocation_over_the_memory_limit_ends_as_oom(workspace):
    (workspace / "grow.py").write_text("def grow():\n    return b'x' * (400 << 20)\n\n\nblocks = grow()\nprint('survived')\n")
    result = sandbox.run_smoke(workspace, _settings(command=["python3", "grow.py"], memory="96m"))
    assert result.status == "failed"
    assert result.oom_killed and result.exit_code == 137
    assert "survived" not in result.output
    assert "memory limit of 96m" in result.message
    assert result.failures and result.failures[0].error_class == "oom"


@needs_docker
def test_a_fork_bomb_is_held_at_the_pids_limit(workspace):
    counted = _run(
        workspace,
        """
        import os, time
        children = 0
        while True:
            try:
                pid = os.fork()
            except OSError as err:
                print("held after", children, "errno", err.errno, flush=True)
                break
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children += 1
        """,
        pids=32,
        timeout_seconds=20.0,
    )
    assert "held after" in counted.output, counted.output
    held = int(counted.output.split("held after")[1].split()[0])
    assert 0 < held < 32
    assert counted.exit_code == 0 and counted.duration_seconds < 10  # PID 1 ended: its children went with it

    began = time.monotonic()
    bomb = sandbox.run_smoke(workspace, _settings(command=["sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"], pids=32, timeout_seconds=3.0))
    assert bomb.status == "failed" and (bomb.timed_out or bomb.exit_code is not None)
    assert time.monotonic() - began < 10
    assert subprocess.run(["true"]).returncode == 0  # the host can still make processes
    assert not containers_left_behind()


@needs_docker
def test_an_endless_loop_is_killed_at_the_timeout(workspace):
    seen: list[str] = []
    result = sandbox.run_smoke(
        workspace,
        _settings(command=["python3", "-c", "print('looping', flush=True)\nwhile True: pass"], timeout_seconds=2.0),
        on_output=seen.append,
    )
    assert result.status == "failed" and result.timed_out
    assert 2.0 <= result.duration_seconds < 3.5
    assert "timed out after 2 s" in result.message
    assert "looping" in "".join(seen) and "looping" in result.output
    assert result.failures and result.failures[0].error_class == "timeout"
    assert not containers_left_behind()


HANGING_MODEL = """\
def train(steps):
    step = 0
    while step < steps:
        step += 0  # never advances: the smoke run hangs here
    return step
"""


@pytest.mark.parametrize("mode", ["docker", "local"])
def test_a_run_stopped_at_the_time_limit_points_at_the_line_it_was_on(workspace, mode, request):
    """At the time limit the run gets SIGABRT first: Python's faulthandler prints every thread's
    stack, and the timeout failure is placed on the workspace line the run was executing."""
    if mode == "docker":
        request.getfixturevalue("docker_engine")
    (workspace / "model.py").write_text(HANGING_MODEL)
    (workspace / "test_model.py").write_text("from model import train\n\n\ndef test_train():\n    assert train(10) == 10\n")
    for path in workspace.iterdir():
        path.chmod(0o644)
    # Long enough for pytest to be in the loop by then on a busy machine (its start can take seconds).
    result = sandbox.run_smoke(workspace, _settings(mode=mode, timeout_seconds=8.0))
    assert result.status == "failed" and result.timed_out, result.output
    assert result.exit_code == 134  # SIGABRT's status, passed on by the container's supervisor
    assert result.duration_seconds < 8.0 + 2.0  # the stack is printed within the grace, then the run ends
    assert "most recent call first" in result.output
    [failure] = result.failures
    assert failure.error_class == "timeout" and "time limit of 8 s" in failure.message
    assert failure.location is not None and failure.location.file == "model.py"
    assert failure.location.line in (2, 3), failure  # `while step < steps:` or its body (0-based lines)
    if mode == "docker":
        assert not containers_left_behind()


@needs_docker
def test_a_cancelled_run_is_killed_and_removed(workspace):
    cancel = threading.Event()
    seen: list[str] = []

    def on_output(text: str) -> None:
        seen.append(text)
        if "ready" in "".join(seen):
            cancel.set()

    began = time.monotonic()
    result = sandbox.run_smoke(
        workspace,
        _settings(command=["python3", "-c", "import time; print('ready', flush=True); time.sleep(60)"]),
        on_output=on_output,
        cancel=cancel,
    )
    assert result.status == "error" and result.message == "cancelled"
    assert "ready" in result.output
    assert time.monotonic() - began < 5
    assert not containers_left_behind()
    assert sandbox.run_smoke(workspace, _settings(command=["true"]), cancel=cancel).message == "cancelled"


@needs_docker
def test_containers_of_a_killed_process_are_reaped(workspace):
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from pathlib import Path
                from paperlens.pipeline import sandbox
                from paperlens.schemas.smoke import SandboxSettings
                settings = SandboxSettings(command=["python3", "-c", "import time; print('ready', flush=True); time.sleep(120)"])
                sandbox.prepare(Path({str(workspace)!r}), SandboxSettings())  # one parked for later, too
                sandbox.drain()
                sandbox.run_smoke(Path({str(workspace)!r}), settings, on_output=lambda text: (sys.stdout.write(text), sys.stdout.flush()))
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "ready" in child.stdout.readline()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        child.kill()
    api = docker_run.client().api
    theirs = {"label": [f"{docker_run.LABEL}=1", f"{docker_run.OWNER_LABEL}={docker_run.owner().rsplit(':', 1)[0]}:{child.pid}"]}
    left = api.containers(all=True, filters=theirs)
    assert len(left) == 2  # the running one and the parked one
    deadline = time.monotonic() + 10
    while any(c["State"] == "running" for c in api.containers(all=True, filters=theirs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert {c["State"] for c in api.containers(all=True, filters=theirs)} == {"exited"}  # their stdin closed: both ended
    assert sandbox.reap_leftovers() >= 2
    assert api.containers(all=True, filters=theirs) == []


@needs_docker
def test_the_next_container_is_made_ahead_of_time_and_used(workspace):
    settings = _settings(command=["python3", "-c", "print('hello')"])
    first = docker_run.run_docker(workspace, settings.command, settings)
    sandbox.drain()
    parked = set(docker_run.pooled_ids())
    assert len(parked) >= 1
    states = {c["Id"]: c["State"] for c in my_containers()}
    waiting = [cid for cid in parked if cid in states]
    assert waiting and all(states[cid] == "running" for cid in waiting)  # parked at the gate, nothing run yet
    second = docker_run.run_docker(workspace, settings.command, settings)
    assert second.pooled and "create" not in second.timings and "start" not in second.timings
    assert first.output == second.output == "hello\n"
    sandbox.drain()
    now = set(docker_run.pooled_ids())
    assert len(parked - now) == 1  # the parked one ran and is gone; a new one waits in its place
    assert not (set(states) & now - parked) and not containers_left_behind()
    other = docker_run.run_docker(workspace, settings.command, settings.model_copy(update={"memory": "300m"}))
    assert not other.pooled  # anything different: not the parked container
    sandbox.set_prewarm(None)
    try:
        sandbox.drain()  # the last run's removal
        assert docker_run.pooled_ids() == [] and my_containers() == []
    finally:
        sandbox.set_prewarm("started")


def _interrupt_main_thread_once_in(function_name: str) -> threading.Thread:
    """Sends Ctrl-C (SIGINT) to the main thread as soon as it is inside `function_name`."""
    main = threading.main_thread().ident

    def watch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            frame = sys._current_frames().get(main)
            while frame is not None:
                if frame.f_code.co_name == function_name:
                    signal.pthread_kill(main, signal.SIGINT)
                    return
                frame = frame.f_back
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


@needs_docker
@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_run_interrupted_while_it_waits_for_the_parked_container_leaves_none_behind(workspace):
    """Ctrl-C while a run waits for the container being made ahead of time: that container is out
    of the pool, and it is removed once made, not left to outlive the run."""
    settings = _settings(command=["python3", "-c", "print('never run')"])
    hold = threading.Event()
    docker_run._background().submit(hold.wait, 30)  # the container made ahead queues behind this
    assert sandbox.prepare(workspace, settings) is None
    watcher = _interrupt_main_thread_once_in("_take")
    try:
        with pytest.raises(KeyboardInterrupt):
            sandbox.run_smoke(workspace, settings)
    finally:
        hold.set()
        watcher.join()
    assert not containers_left_behind()
    again = sandbox.run_smoke(workspace, _settings(command=["python3", "-c", "print('next run')"]))
    assert again.status == "passed" and again.output == "next run\n"
    assert not containers_left_behind()


# --------------------------------------------------------------------------------------------
# The command, the output, the image
# --------------------------------------------------------------------------------------------


@needs_docker
def test_pytest_by_default(workspace):
    (workspace / "test_model.py").write_text("def test_shape():\n    import numpy as np\n    assert np.zeros((2, 3)).shape == (3, 2)\n")
    result = sandbox.run_smoke(workspace, _settings())
    assert result.command == ["python3", "-m", "pytest", "-x", "-q"]
    assert result.status == "failed" and result.exit_code == 1
    assert "assert (2, 3) == (3, 2)" in result.output
    assert not (workspace / ".pytest_cache").exists() and not (workspace / "__pycache__").exists()
    assert result.failures and result.failures[0].location.file == "test_model.py"
    (workspace / "test_model.py").unlink()
    empty = sandbox.run_smoke(workspace, _settings())
    assert empty.status == "error" and empty.exit_code == 5 and "no tests were collected" in empty.message


def test_the_command_is_found_in_the_workspace(tmp_path):
    settings = SandboxSettings()
    assert sandbox.resolve_command(tmp_path, settings) == (["python3", "-m", "pytest", "-x", "-q"], "pytest")
    (tmp_path / "reproduce.py").write_text("print('a full run, with no smoke flag')\n")
    assert sandbox.resolve_command(tmp_path, settings)[1] == "pytest"  # it would run in full
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "reproduce.sh").write_text("#!/usr/bin/env bash\n[ \"$1\" = --smoke ] && STEPS=1\n")
    assert sandbox.resolve_command(tmp_path, settings) == (["bash", "scripts/reproduce.sh", "--smoke"], "reproduce")
    (tmp_path / "reproduce.py").write_text("import sys\nsmoke = '--smoke' in sys.argv\n")
    assert sandbox.resolve_command(tmp_path, settings) == (["python3", "reproduce.py", "--smoke"], "reproduce")
    assert sandbox.resolve_command(tmp_path, SandboxSettings(command=["make", "smoke"])) == (["make", "smoke"], "configured")


def test_output_over_the_limit_keeps_its_head_and_tail():
    seen: list[str] = []
    output = CappedOutput(10_000, seen.append)
    lines = [f"line {n:05d} é\n".encode() for n in range(5_000)]
    for line in lines:
        output.feed(line)
    text = output.finish()
    assert output.truncated
    assert text.startswith("line 00000 é\n") and text.endswith("line 04999 é\n")
    assert "bytes of output cut by paperlens" in text and len(text.encode()) < 10_200
    assert all(line.startswith(("line ", "[")) and line.endswith("é") or line.startswith("[") for line in text.splitlines())
    streamed = "".join(seen)
    assert streamed.startswith("line 00000") and streamed.endswith("line 04999 é\n") and len(streamed.encode()) < 21_000
    small = CappedOutput(10_000, seen.append)
    small.feed("é".encode()[:1])
    small.feed("é".encode()[1:] + b"\n")
    assert small.finish() == "é\n" and not small.truncated


@needs_docker
def test_output_is_streamed_and_capped_in_the_container(workspace):
    seen: list[str] = []
    script = "import sys\nprint('first', flush=True)\nfor n in range(100_000): print(n)\nprint('boom', file=sys.stderr)\nprint('last')"
    result = sandbox.run_smoke(workspace, _settings(command=["python3", "-c", script], output_limit_bytes=20_000), on_output=seen.append)
    assert result.output_truncated and "output cut to 20,000 bytes" in result.message
    assert result.output.startswith("first\n0\n1\n") and result.output.endswith("99999\nboom\nlast\n")  # stderr in its place
    assert len(result.output.encode()) < 20_500


@needs_docker
def test_an_image_is_built_from_the_workspace_dockerfile_once_per_content(workspace, request):
    (workspace / "requirements.txt").write_text("numpy\n")
    (workspace / "model.py").write_text("print('model')\n")
    (workspace / "Dockerfile").write_text(  # a new image for every test run: the token
        f"FROM {DEFAULT_SANDBOX_IMAGE}\n# {uuid.uuid4()}\nCOPY requirements.txt /opt/requirements.txt\nRUN echo built-here > /opt/marker\n"
    )
    settings = _settings(command=["python3", "-c", "print(open('/opt/marker').read().strip())"])
    seen: list[str] = []
    result = sandbox.run_smoke(workspace, settings, on_output=seen.append)
    request.addfinalizer(lambda: _remove_image(result.image))
    assert result.status == "passed", result.message
    assert result.image.startswith("paperlens-ws:") and "built-here" in result.output
    assert "building paperlens-ws:" in "".join(seen)
    tag = result.image
    (workspace / "model.py").write_text("print('model, edited')\n")  # not copied into the image
    assert f"paperlens-ws:{images.workspace_image_hash(workspace)[:16]}" == tag
    seen.clear()
    assert sandbox.run_smoke(workspace, settings, on_output=seen.append).image == tag and "building" not in "".join(seen)
    (workspace / "requirements.txt").write_text("numpy==1.26.4\n")
    assert f"paperlens-ws:{images.workspace_image_hash(workspace)[:16]}" != tag

    (workspace / "Dockerfile").write_text(f"FROM {DEFAULT_SANDBOX_IMAGE}\nRUN echo about to fail && false\n")
    failed = sandbox.run_smoke(workspace, settings)
    assert failed.status == "error"
    assert "Building the workspace's Dockerfile failed" in failed.message and "about to fail" in failed.message
    assert "sandbox.build_network" in failed.message


def _remove_image(tag: str | None) -> None:
    sandbox.drain()
    docker_run.discard_pool()  # a parked container would hold the image
    if tag and tag.startswith("paperlens-ws:"):
        try:
            docker_run.client().api.remove_image(tag, force=True)
        except Exception:
            pass


def test_the_image_hash_covers_what_the_dockerfile_copies(tmp_path):
    assert images.copy_sources("FROM x\nCOPY --chown=1:1 req.txt setup.cfg /app/\nADD https://example.org/a.tgz /a\n") == ["req.txt", "setup.cfg"]
    assert images.copy_sources('FROM x\nCOPY ["a b.txt", "/dst/"]\nCOPY --from=build /out /out\n') == ["a b.txt"]
    assert images.copy_sources("FROM x\nCOPY $SRC /dst\n") is None
    assert images.copy_sources("FROM x\nRUN apt-get update && \\\n    apt-get install -y curl\nCOPY src \\\n  /app/src\n") == ["src"]
    (tmp_path / "Dockerfile").write_text("FROM x\nCOPY deps/ /deps/\n")
    (tmp_path / "deps").mkdir()
    (tmp_path / "deps" / "a.txt").write_text("a")
    (tmp_path / "deps" / "big.bin").write_text("b")
    (tmp_path / "train.py").write_text("print(1)")
    first = images.workspace_image_hash(tmp_path)
    (tmp_path / "train.py").write_text("print(2)")
    assert images.workspace_image_hash(tmp_path) == first
    (tmp_path / ".dockerignore").write_text("deps/*.bin\n")
    ignoring = images.workspace_image_hash(tmp_path)
    assert ignoring != first
    (tmp_path / "deps" / "big.bin").write_text("changed")
    assert images.workspace_image_hash(tmp_path) == ignoring
    (tmp_path / "deps" / "a.txt").write_text("changed")
    assert images.workspace_image_hash(tmp_path) != ignoring


# --------------------------------------------------------------------------------------------
# Docker unavailable
# --------------------------------------------------------------------------------------------


def test_no_engine_says_how_to_fix_it(workspace, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    result = sandbox.run_smoke(workspace, _settings())
    assert result.status == "error" and result.isolated
    assert "not reachable" in result.message and "start the Docker daemon" in result.message
    assert 'sandbox.mode = "local"' in result.message
    assert sandbox.reap_leftovers() == 0
    assert sandbox.prepare(workspace, _settings()) == result.message


def test_no_permission_says_how_to_fix_it():
    import requests

    denied = requests.exceptions.ConnectionError(PermissionError(13, "Permission denied"))
    message = docker_run._engine_message(denied)
    assert "No permission" in message and "usermod -aG docker" in message and 'sandbox.mode = "local"' in message


def test_no_docker_package_says_how_to_fix_it(workspace, monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)
    result = sandbox.run_smoke(workspace, _settings())
    assert result.status == "error" and "pip install" in result.message and 'sandbox.mode = "local"' in result.message


@needs_docker
def test_a_missing_image_says_how_to_fix_it(workspace):
    result = sandbox.run_smoke(workspace, _settings(image="paperlens-test-missing:never"))
    assert result.status == "error"
    assert "docker pull paperlens-test-missing:never" in result.message and "sandbox.image" in result.message


# --------------------------------------------------------------------------------------------
# Local mode
# --------------------------------------------------------------------------------------------


def test_local_mode_kills_the_process_group_at_the_timeout(workspace, tmp_path):
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pid_file}; echo started; sleep 60"
    result = sandbox.run_smoke(workspace, _settings(mode="local", command=["sh", "-c", script], timeout_seconds=1.0))
    assert result.status == "failed" and result.timed_out and not result.isolated and result.mode == "local"
    assert 1.0 <= result.duration_seconds < 2.5
    assert "started" in result.output and result.message.startswith("ran unisolated")
    background = int(pid_file.read_text())
    time.sleep(0.2)
    assert not _alive(background)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_local_mode_applies_the_limits(workspace):
    script = """
    import os, resource
    print("cpus", len(os.sched_getaffinity(0)))
    print("as", resource.getrlimit(resource.RLIMIT_AS)[0] >> 20)
    print("core", resource.getrlimit(resource.RLIMIT_CORE)[0])
    print("smoke", os.environ.get("PAPERLENS_SMOKE"), os.environ.get("PYTEST_ADDOPTS"))
    print("secret", os.environ.get("PAPERLENS_TEST_API_KEY"))
    try:
        block = bytearray(600 << 20)
        print("ALLOCATED")
    except MemoryError:
        print("refused")
    """
    os.environ["PAPERLENS_TEST_API_KEY"] = "sk-test"
    try:
        result = sandbox.run_smoke(workspace, _settings(mode="local", memory="300m", cpus=1.0, command=[sys.executable, "-c", textwrap.dedent(script)]))
    finally:
        del os.environ["PAPERLENS_TEST_API_KEY"]
    assert result.status == "passed" and not result.isolated, result.output
    assert "cpus 1" in result.output and "as 300" in result.output and "core 0" in result.output
    assert "smoke 1 -p no:cacheprovider" in result.output and "secret None" in result.output
    assert "refused" in result.output and "ALLOCATED" not in result.output


def test_local_mode_runs_pytest_in_this_environment(workspace):
    (workspace / "test_it.py").write_text("import sys\n\ndef test_it():\n    assert sys.prefix\n")
    result = sandbox.run_smoke(workspace, _settings(mode="local"))
    assert result.command[0] == sys.executable and result.status == "passed", result.output
    assert not (workspace / ".pytest_cache").exists()
