"""Docker mode: each smoke run in a fresh container, made with docker-py's low-level API.

The container: no network (unless `sandbox.network`), the workspace bind-mounted read-only at
/workspace (the working directory), the root file system read-only, a writable tmpfs at /tmp
(`sandbox.scratch`; HOME, TMPDIR and caches point there), a non-root user (65534:65534 —
nobody — when paperlens runs as root, else the caller's own uid:gid, so that a workspace only its
owner may read is readable; either way the mount stays read-only), all capabilities dropped,
no-new-privileges, memory = memory + swap (no swap), CPU quota, a pids limit, no core files, no
log driver (the output is read from the attach stream, so a flood fills no disk), and labels
`paperlens.sandbox=1`, `paperlens.owner=<host>:<pid>` (+ the owner's start time, so that a
recycled pid is not taken for it).

The supervisor (images with /bin/sh; others run the command as it is): the entrypoint is a few
lines of sh (SUPERVISOR) with the command as its arguments, and this process holds the
container's stdin through the attach connection. It waits for one line (the go), runs the command
with an empty stdin and stderr into stdout (Docker copies the two pipes apart and mixes their
order up otherwise), and kills it when stdin ends — which happens when this process dies, so a
run does not outlive a killed server (its stopped container is reaped later). On SIGUSR1 (the time
limit) it sends the run SIGABRT, so that Python's faulthandler prints where the run was.

The run: attach, start (or take a parked container), send the go, read the multiplexed stream
until it ends, `wait` for the exit status, inspect for OOMKilled. A wall-clock timeout (after
DUMP_GRACE for the stack to be printed) and the caller's cancel kill the container. It is always removed: in the background right after the
result is made (the result does not wait for it; `drain()` does; at exit the remaining work is
done), and labelled containers a crash left behind are removed by `reap_leftovers()` (called at
the first run in a process, and by the server at start).

Hiding the start-up cost without giving up isolation (the pool): after a run, the next container
for the same image id, command, workspace and limits is made ahead of time in a background
thread, and the next run with that key takes it. A container is never used for more than one run
(a warm container would keep /tmp, processes and memory between runs). Measured here (bench/
sandbox.py), `create` is cheap (~20 ms) and `start` is the cost (~90-200 ms: namespaces, cgroups,
mounts), so the container is made *and started* ahead of time: it sits in the supervisor's first
`read`, having run nothing, with a fresh /tmp; the bind mount shows the workspace's files as they
are when the go comes. If this process dies first, the read ends and the container exits without
running anything. `PREWARM = "created"` makes them only created (the start is then paid by the
run); `None` turns the pool off (a one-shot CLI run gains nothing from it). At most `POOL_SIZE`
keys are kept; a run with another key evicts the least recently used. Parked containers are
removed at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...schemas.smoke import SandboxSettings
from .common import Outcome, smoke_env, watch
from .errors import Cancelled, SandboxUnavailable
from .images import resolve_image
from .output import CappedOutput

log = logging.getLogger(__name__)

LABEL = "paperlens.sandbox"
OWNER_LABEL = "paperlens.owner"
CREATION_LABEL = "paperlens.creation"  # unique per container: found even when its id never came back
WORKSPACE_LABEL = "paperlens.workspace"  # the workspace a container ran on (a leak names its test)
OWNER_START_LABEL = "paperlens.owner-start"
WORKSPACE_IN_RUN = "/workspace"
SCRATCH = "/tmp"
NOBODY = "65534:65534"
# The container's entrypoint when the image has /bin/sh, with the command as "$@" and this process
# holding the container's stdin through the attach connection:
SUPERVISOR = (
    "read -r _ || exit 0; "  # wait for the go (a line); end of file first: exit, nothing run
    "exec 3<&0; "
    '"$@" </dev/null 3<&- 2>&1 & run=$!; '  # the command: empty stdin, stderr into stdout (order kept)
    '(read -r _ <&3; kill -9 "$run" 2>/dev/null) & '  # stdin ends (this process is gone): kill the run
    'trapped=; trap \'trapped=1; kill -ABRT "$run" 2>/dev/null\' USR1; '  # the time limit: faulthandler shows where it was
    'wait "$run"; status=$?; '
    # A trap ends the wait early: wait again for the run's own status (127: it was collected already).
    'if [ -n "$trapped" ]; then wait "$run"; again=$?; [ "$again" -eq 127 ] || status=$again; fi; '
    'exit "$status"'  # the run's exit status is the container's
)
API_TIMEOUT = 60  # seconds for one Docker API call (wait and the output stream have none)
POOL_SIZE = 2
PREWARM: Literal["started", "created"] | None = "started"

_lock = threading.RLock()
_clients: dict[tuple, Any] = {}
_reaped: set[str] = set()  # the engines reaped in this process
_pool: OrderedDict[tuple, Future] = OrderedDict()  # key -> Future[_Parked]
_no_shell: set[str] = set()  # image ids without /bin/sh
_executor: ThreadPoolExecutor | None = None
_atexit_registered = False
last_timings: dict[str, float] = {}  # the phases of the last run in this process (for bench/)


def _forget_in_child() -> None:
    """A forked child owns none of its parent's containers, clients or background thread."""
    global _executor, _lock
    _lock = threading.RLock()
    _pool.clear()
    _clients.clear()
    _reaped.clear()
    _executor = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


def _engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def client() -> Any:
    """The docker-py client for the engine the environment names (DOCKER_HOST ...), made once."""
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable(
            "The docker Python package is not installed in paperlens' environment: `pip install 'docker>=7'` there, "
            'or set sandbox.mode = "local" to run smoke runs unisolated.'
        ) from None
    key = tuple(os.environ.get(name) for name in ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"))
    with _lock:
        found = _clients.get(key)
        if found is not None:
            return found
    with engine_errors():
        made = docker.from_env(timeout=API_TIMEOUT)
    with _lock:
        return _clients.setdefault(key, made)


@contextlib.contextmanager
def engine_errors() -> Iterator[None]:
    """Turns "no engine" and "no permission" into a SandboxUnavailable that says how to fix it."""
    import docker.errors
    import requests.exceptions

    try:
        yield
    except requests.exceptions.Timeout:
        raise SandboxUnavailable(
            f"The Docker engine at {_engine_address()} did not answer within {API_TIMEOUT} s: check that it is healthy "
            "(`docker info`), or restart it."
        ) from None
    except (requests.exceptions.ConnectionError, ConnectionError, FileNotFoundError) as err:
        raise SandboxUnavailable(_engine_message(err)) from None
    except docker.errors.DockerException as err:
        if isinstance(err, docker.errors.APIError):
            raise
        if "server API version" in str(err):
            raise SandboxUnavailable(_engine_message(err)) from None
        raise SandboxUnavailable(f"Docker: {err}") from None


def _nothing_listens() -> OSError | None:
    """Why the engine cannot be there, when its address is a Unix socket that is missing or refuses
    connections; checked without docker-py, which takes a while to import. None otherwise: other
    addresses (TCP, SSH) and other errors (no permission) are docker-py's to report."""
    address = _engine_address()
    if not address.startswith("unix://"):
        return None
    with socket.socket(socket.AF_UNIX) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(address.removeprefix("unix://"))
        except (FileNotFoundError, ConnectionRefusedError) as err:
            return err
        except OSError:
            return None
    return None


def _engine_message(err: BaseException) -> str:
    address = _engine_address()
    chain = []
    seen: BaseException | None = err
    while seen is not None and len(chain) < 10:
        chain.append(repr(seen))
        seen = seen.__cause__ or seen.__context__
    text = " ".join(chain)
    if "PermissionError" in text or "Permission denied" in text:
        return (
            f"No permission to use the Docker engine at {address}: add your user to the docker group "
            "(`sudo usermod -aG docker $USER`, then log in again), or set sandbox.mode = \"local\" to run smoke runs unisolated."
        )
    return (
        f"The Docker engine is not reachable at {address}: start the Docker daemon (e.g. `sudo systemctl start docker`; "
        "in a paperlens checkout, scripts/sandbox-engine.sh installs and starts one), or point DOCKER_HOST at a running "
        'engine, or set sandbox.mode = "local" to run smoke runs unisolated.'
    )


# --------------------------------------------------------------------------------------------
# Ownership and reaping
# --------------------------------------------------------------------------------------------


def _start_ticks(pid: int) -> str:
    """The process's start time (clock ticks since boot), '' where /proc has none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_alive(pid: int, ticks: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive
    return not ticks or _start_ticks(pid) in ("", ticks)


def reap_leftovers() -> int:
    """Removes labelled containers whose owner process on this host is gone; how many. Never
    raises: without an engine there is nothing to reap."""
    if (refused := _nothing_listens()) is not None:  # the server reaps at start: no docker-py for nothing
        log.info("sandbox: no leftovers reaped (%s)", _engine_message(refused))
        return 0
    try:
        api = client().api
        with engine_errors():
            return _reap(api)
    except Exception as err:  # an engine problem: logged, nothing reaped
        log.info("sandbox: no leftovers reaped (%s)", err)
        return 0


def _reap(api: Any) -> int:
    import docker.errors

    host = socket.gethostname()
    removed = 0
    for container in api.containers(all=True, filters={"label": f"{LABEL}=1"}):
        labels = container.get("Labels") or {}
        where, _, pid = labels.get(OWNER_LABEL, "").rpartition(":")
        if where != host or not pid.isdigit() or int(pid) == os.getpid():
            continue
        if _owner_alive(int(pid), labels.get(OWNER_START_LABEL, "")):
            continue
        try:
            api.remove_container(container["Id"], force=True)
            removed += 1
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as err:
            if "already in progress" not in str(err):
                log.warning("sandbox: could not remove leftover container %s: %s", container["Id"][:12], err)
    if removed:
        log.info("sandbox: removed %d leftover container(s) of processes that are gone", removed)
    return removed


# --------------------------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------------------------


@dataclass
class _Parked:
    api: Any
    id: str
    started: bool  # started and waiting for the go (else only created)
    supervised: bool = True  # runs under SUPERVISOR (else the command as it is: no /bin/sh)
    sock: Any = None  # the attach stream of a started one (its stdin held)
    response: Any = None


def _user() -> str:
    return NOBODY if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"


def container_spec(api: Any, image_id: str, command: list[str], workspace: Path, settings: SandboxSettings) -> dict:
    """create_container's arguments (the supervisor, when the image has /bin/sh, is put in front later)."""
    from docker.types import LogConfig, Mount, Ulimit

    host_config = api.create_host_config(
        network_mode="bridge" if settings.network else "none",
        mounts=[Mount(target=WORKSPACE_IN_RUN, source=str(workspace), type="bind", read_only=True)],
        tmpfs={SCRATCH: f"rw,exec,nosuid,nodev,size={settings.scratch},mode=1777"},
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        mem_limit=settings.memory,
        memswap_limit=settings.memory,
        nano_cpus=int(settings.cpus * 1e9),
        pids_limit=settings.pids,
        ulimits=[Ulimit(name="core", soft=0, hard=0)],
        log_config=LogConfig(type="none"),
    )
    return {
        "image": image_id,
        "entrypoint": command[:1],
        "command": command[1:],
        "working_dir": WORKSPACE_IN_RUN,
        "user": _user(),
        # The image's content digest: a run's record (a scaffold's environment.json) names what it ran in.
        "environment": smoke_env(settings.cpus, SCRATCH) | {"PAPERLENS_IMAGE_DIGEST": image_id},
        "labels": {
            LABEL: "1",
            OWNER_LABEL: owner(),
            OWNER_START_LABEL: _start_ticks(os.getpid()),
            WORKSPACE_LABEL: str(workspace),
        },
        "network_disabled": not settings.network,
        "host_config": host_config,
    }


def _key(api: Any, spec: dict) -> tuple:
    text = json.dumps(spec, sort_keys=True, default=str)
    return (api.base_url, hashlib.sha256(text.encode()).hexdigest())


def _attach(api: Any, container_id: str, *, stdin: bool) -> tuple[Any, Any]:
    """The attach stream before start (so no output is missed), with no read timeout."""
    params = {"stdout": 1, "stderr": 1, "stream": 1, "stdin": 1 if stdin else 0}
    response = api.post(
        api._url("/containers/{0}/attach", container_id),
        None,
        params=params,
        stream=True,
        headers={"Connection": "Upgrade", "Upgrade": "tcp"},
    )
    sock = api._get_raw_response_socket(response)
    for candidate in (sock, getattr(sock, "_sock", None)):
        if hasattr(candidate, "settimeout"):
            candidate.settimeout(None)
    return response, sock


def _close(parked_or_pair: Any) -> None:
    for thing in (getattr(parked_or_pair, "sock", None), getattr(parked_or_pair, "response", None)):
        with contextlib.suppress(Exception):
            if thing is not None:
                thing.close()


def _gate_supported(api: Any) -> bool:
    """The gate writes to the attach socket: a local socket or plain TCP, not ssh or a pipe."""
    return api.base_url.startswith(("http+docker://localhost", "http+docker://localunixsocket", "http://"))


def _make(api: Any, spec: dict, *, started: bool, supervised: bool = True) -> _Parked:
    """A container for `spec`, created, and started when `started` (then it waits for the go)."""
    if supervised:
        command = [*spec["entrypoint"], *spec["command"]]
        spec = spec | {"entrypoint": ["/bin/sh", "-c", SUPERVISOR, "sh"], "command": command, "stdin_open": True}
    # Labelled uniquely, so that a container the engine made while we were interrupted (Ctrl-C before
    # its id came back) can still be found and removed.
    creation = uuid.uuid4().hex
    try:
        container_id = api.create_container(**(spec | {"labels": spec["labels"] | {CREATION_LABEL: creation}}))["Id"]
    except BaseException:
        with contextlib.suppress(Exception):
            for orphan in api.containers(all=True, filters={"label": f"{CREATION_LABEL}={creation}"}):
                _remove(api, orphan["Id"])
        raise
    parked = _Parked(api, container_id, False, supervised)
    if not started:
        return parked
    try:
        parked.response, parked.sock = _attach(api, container_id, stdin=True)
        api.start(container_id)
    except BaseException:
        _close(parked)
        _remove(api, container_id)
        raise
    parked.started = True
    return parked


def _go(parked: _Parked) -> None:
    """The line the supervisor waits for; stdin stays open: it closes when this process ends."""
    raw = getattr(parked.sock, "_sock", parked.sock)
    raw.sendall(b"\n")


def _remove(api: Any, container_id: str) -> float:
    import docker.errors

    began = time.perf_counter()
    try:
        api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as err:
        if "already in progress" not in str(err):
            log.warning("sandbox: could not remove container %s: %s", container_id[:12], err)
    except Exception as err:  # the engine went away: reaped at the next start
        log.warning("sandbox: could not remove container %s: %s", container_id[:12], err)
    return time.perf_counter() - began


# --------------------------------------------------------------------------------------------
# The pool of containers made ahead of time
# --------------------------------------------------------------------------------------------


def _background() -> ThreadPoolExecutor:
    global _executor, _atexit_registered
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paperlens-sandbox")
        if not _atexit_registered:
            atexit.register(discard_pool)
            _atexit_registered = True
        return _executor


def _later(function: Callable[..., Any], *args: Any) -> Future | None:
    try:
        return _background().submit(function, *args)
    except RuntimeError:  # shutting down: do it now
        function(*args)
        return None


def _take(key: tuple) -> _Parked | None:
    with _lock:
        future = _pool.pop(key, None)
    if future is None:
        return None
    try:
        return future.result(timeout=API_TIMEOUT)
    except BaseException as err:
        # Not taken (a slow engine, Ctrl-C while waiting): it is out of the pool, so it is removed
        # whenever it is made, or it would outlive this run unseen.
        _discard(future)
        if not isinstance(err, Exception):
            raise
        log.info("sandbox: the container made ahead of time is not usable (%s)", err)
        return None


def _refill(api: Any, key: tuple, spec: dict, image_id: str) -> None:
    if PREWARM is None:
        return
    supervised = image_id not in _no_shell and _gate_supported(api)
    started = PREWARM == "started" and supervised
    with _lock:
        if key in _pool:
            _pool.move_to_end(key)
            return
        _pool[key] = future = _background().submit(_make_ahead, api, spec, started, supervised, image_id)
        evicted = []
        while len(_pool) > POOL_SIZE:
            evicted.append(_pool.popitem(last=False)[1])
    for old in evicted:
        _later(_discard, old)
    del future


def _make_ahead(api: Any, spec: dict, started: bool, supervised: bool, image_id: str) -> _Parked:
    try:
        return _make(api, spec, started=started, supervised=supervised)
    except Exception as err:
        if supervised and _no_sh(err):
            _no_shell.add(image_id)
            return _make(api, spec, started=False, supervised=False)
        raise


def _no_sh(err: BaseException) -> bool:
    return "/bin/sh" in str(err) and ("no such file" in str(err).lower() or "not found" in str(err).lower())


def _discard(future: Future) -> None:
    """Removes the container `future` makes, now if it is made, else as soon as it is."""
    future.add_done_callback(_remove_made)


def _remove_made(future: Future) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    parked = future.result()
    _close(parked)
    _remove(parked.api, parked.id)


def discard_pool() -> None:
    """Removes the containers made ahead of time (registered with atexit)."""
    with _lock:
        futures = list(_pool.values())
        _pool.clear()
    for future in futures:
        with contextlib.suppress(Exception):
            _discard(future)


def pooled_ids() -> list[str]:
    """The ids of the containers made ahead of time that are ready (for tests and bench/)."""
    with _lock:
        futures = list(_pool.values())
    ids = []
    for future in futures:
        if future.done() and future.exception() is None:
            ids.append(future.result().id)
    return ids


def drain() -> None:
    """Waits until the background work (removals, containers made ahead of time) is done."""
    with contextlib.suppress(RuntimeError):
        _background().submit(lambda: None).result()


@contextlib.contextmanager
def without_prewarm() -> Iterator[None]:
    """No container made ahead within the block (one-off runs, minutes apart); as before after it."""
    previous = PREWARM
    set_prewarm(None)
    try:
        yield
    finally:
        set_prewarm(previous)


def set_prewarm(mode: Literal["started", "created"] | None) -> None:
    """How the next container is made ahead of time; None: not at all (and the pool is emptied)."""
    global PREWARM
    PREWARM = mode
    discard_pool()


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def prepare(workspace: Path, command: list[str], settings: SandboxSettings) -> None:
    """Resolves (builds) the image and makes the first container ahead of time, so that the first
    run is as fast as the later ones. Raises SandboxUnavailable."""
    if (refused := _nothing_listens()) is not None:  # the server prepares at start: no docker-py for nothing
        raise SandboxUnavailable(_engine_message(refused))
    api = client().api
    with engine_errors():
        _first_run(api)
        _image, image_id = resolve_image(api, workspace, settings)
        spec = container_spec(api, image_id, command, workspace, settings)
        _refill(api, _key(api, spec), spec, image_id)


def _first_run(api: Any) -> None:
    with _lock:
        if api.base_url in _reaped:
            return
        _reaped.add(api.base_url)
    _reap(api)


def run_docker(
    workspace: Path,
    command: list[str],
    settings: SandboxSettings,
    *,
    on_output: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> Outcome:
    """Runs `command` in a fresh container; raises SandboxUnavailable or Cancelled when it cannot."""
    api = client().api  # first: it says what to do when the docker package is missing
    import docker.errors

    timings: dict[str, float] = {}
    try:
        with engine_errors():
            began = time.perf_counter()
            _first_run(api)
            image, image_id = resolve_image(api, workspace, settings, on_output=on_output, cancel=cancel)
            timings["image"] = time.perf_counter() - began
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            spec = container_spec(api, image_id, command, workspace, settings)
            key = _key(api, spec)
            return _run(api, spec, key, image, image_id, settings, timings, on_output, cancel)
    except docker.errors.APIError as err:
        raise SandboxUnavailable(f"The Docker engine refused the run: {err.explanation or err}") from None


def _run(
    api: Any,
    spec: dict,
    key: tuple,
    image: str,
    image_id: str,
    settings: SandboxSettings,
    timings: dict[str, float],
    on_output: Callable[[str], None] | None,
    cancel: threading.Event | None,
) -> Outcome:
    global last_timings
    began = time.perf_counter()
    parked = container_id = None
    output = CappedOutput(settings.output_limit_bytes, on_output)
    chunks: queue.SimpleQueue = queue.SimpleQueue()
    response = sock = None
    try:
        parked = _take(key)
        container_id = parked.id if parked else None  # from here on, removed whatever happens
        if parked is not None and parked.started and not _still_parked(api, parked):  # it removes the dead one
            parked = container_id = None
        pooled = parked is not None
        timings["take"] = time.perf_counter() - began
        if parked is not None and parked.started:
            began = time.perf_counter()
            start = time.monotonic()
            try:
                _go(parked)
            except OSError as err:  # the parked container went away: a fresh one
                log.info("sandbox: the parked container did not take the run (%s)", err)
                _later(_finish, parked, {})
                parked = container_id = None
                pooled = False
            else:
                response, sock = parked.response, parked.sock
                timings["go"] = time.perf_counter() - began
                went = time.perf_counter()
        if parked is None or not parked.started:
            if parked is None:
                began = time.perf_counter()
                parked = _make(api, spec, started=False, supervised=image_id not in _no_shell and _gate_supported(api))
                container_id = parked.id
                timings["create"] = time.perf_counter() - began
            try:
                response, sock, start, went = _attach_and_start(api, parked, timings)
            except Exception as err:
                if not (parked.supervised and _no_sh(err)):
                    raise
                _no_shell.add(image_id)  # this image has no /bin/sh: the command runs as it is
                _later(_finish, parked, {})
                parked = container_id = None
                parked = _make(api, spec, started=False, supervised=False)
                container_id = parked.id
                response, sock, start, went = _attach_and_start(api, parked, timings)
        phase = {"output_end": 0.0}

        def pump() -> None:
            from docker.utils.socket import frames_iter

            try:
                for _stream, data in frames_iter(sock, False):
                    chunks.put(data)
            except Exception as err:  # the stream broke: the exit status still tells the end
                log.debug("sandbox: output stream ended: %s", err)
            phase["output_end"] = time.perf_counter()
            try:
                chunks.put(("exit", api.wait(container_id)))
            except Exception as err:
                chunks.put(("error", err))

        threading.Thread(target=pump, name="paperlens-smoke-output", daemon=True).start()
        # At the time limit: the supervisor passes SIGABRT on to the run; a command run as it is gets it itself.
        dump_signal = "SIGUSR1" if parked.supervised else "SIGABRT"
        watched = watch(
            chunks,
            output,
            deadline=start + settings.timeout_seconds,
            cancel=cancel,
            kill=lambda: _kill(api, container_id),
            interrupt=lambda: _kill(api, container_id, dump_signal),
        )
        ended = time.perf_counter()
        timings["run"] = (phase["output_end"] or ended) - went
        timings["wait"] = ended - (phase["output_end"] or ended)
        exit_code = None
        if watched.end is not None and watched.end[0] == "exit":
            exit_code = watched.end[1].get("StatusCode")
        began = time.perf_counter()
        state = api.inspect_container(container_id)["State"]
        timings["inspect"] = time.perf_counter() - began
        if exit_code is None and not state.get("Running"):
            exit_code = state.get("ExitCode")
        return Outcome(
            exit_code=exit_code,
            timed_out=watched.killed_for == "timeout",
            oom_killed=bool(state.get("OOMKilled")),
            cancelled=watched.killed_for == "cancel",
            duration=watched.ended_at - start,
            output=output.finish(),
            truncated=output.truncated,
            image=image,
            timings=timings,
            pooled=pooled,
        )
    finally:
        if container_id is None and parked is not None:
            container_id = parked.id  # Ctrl-C between taking it and noting its id
        if container_id is not None:
            _later(_finish, _Parked(api, container_id, False, True, sock, response), timings)
            _refill(api, key, spec, image_id)
        last_timings = timings


def _attach_and_start(api: Any, parked: _Parked, timings: dict[str, float]) -> tuple[Any, Any, float, float]:
    began = time.perf_counter()
    parked.response, parked.sock = _attach(api, parked.id, stdin=parked.supervised)
    timings["attach"] = time.perf_counter() - began
    began = time.perf_counter()
    start = time.monotonic()
    try:
        api.start(parked.id)
        if parked.supervised:
            _go(parked)
    except BaseException:
        _close(parked)
        raise
    timings["start"] = time.perf_counter() - began
    return parked.response, parked.sock, start, time.perf_counter()


def _still_parked(api: Any, parked: _Parked) -> bool:
    """A parked container that died (engine restart, someone's `docker rm`) is not used."""
    try:
        if api.inspect_container(parked.id)["State"].get("Running"):
            return True
    except Exception:
        pass
    _later(_finish, parked, {})
    return False


def _finish(parked: _Parked, timings: dict[str, float]) -> None:
    _close(parked)
    timings["remove"] = _remove(parked.api, parked.id)


def _kill(api: Any, container_id: str, signal_name: str = "SIGKILL") -> None:
    import docker.errors

    try:
        api.kill(container_id, signal=signal_name)
    except docker.errors.APIError:
        pass  # it ended already
    except Exception as err:
        log.warning("sandbox: could not kill container %s: %s", container_id[:12], err)
