"""The image a smoke run uses: the configured one, one built from the workspace's Dockerfile, or the
base image.

A workspace's `Dockerfile` (at its top level) is built once per content: the tag is
`paperlens-ws:<hash>`, where the hash covers the Dockerfile, the `.dockerignore`, and the files the
Dockerfile's COPY/ADD instructions take from the build context (directories walked, globs
expanded, `.dockerignore` applied as `docker build` applies it). Only those files: the workspace is
mounted into every run anyway, so a Dockerfile that copies just its requirements is rebuilt when
the requirements change, not when a source file does. When a source cannot be resolved without
running the build (a `$VARIABLE`, a heredoc), the hash covers the whole build context instead. A
Dockerfile that copies the whole workspace (`COPY . .`) is therefore rebuilt after every change:
copy only what installing the dependencies needs.

The build runs only when the tag does not exist, with no network unless `sandbox.build_network`;
its log streams to the run's output callback; older images built for the same workspace are removed
after a successful build. A failed build is a `SandboxUnavailable` whose message ends with the build
log's last lines.
"""

from __future__ import annotations

import glob
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...schemas.smoke import DEFAULT_SANDBOX_IMAGE, SandboxSettings
from ..nesting import load_json
from .errors import Cancelled, SandboxUnavailable

WORKSPACE_IMAGE = "paperlens-ws"
WORKSPACE_LABEL = "paperlens.workspace"
HASH_VERSION = b"paperlens-ws 1\n"
BUILD_READ_TIMEOUT = 3600  # seconds a build step may stay silent
BUILD_LOG_LINES = 15  # lines of a failed build's log in the message

_build_locks: dict[str, threading.Lock] = {}
_build_locks_guard = threading.Lock()
_digests: dict[tuple[str, int, int, int], bytes] = {}  # (path, inode, size, mtime_ns) -> sha256


def resolve_image(
    api: Any,
    workspace: Path,
    settings: SandboxSettings,
    *,
    on_output: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> tuple[str, str]:
    """(the image's name as the user knows it, its id); builds the workspace's image when needed."""
    import docker.errors

    if settings.image:
        return settings.image, _image_id(api, settings.image, configured=True)
    dockerfile = workspace / "Dockerfile"
    if dockerfile.is_file():
        tag = f"{WORKSPACE_IMAGE}:{workspace_image_hash(workspace)[:16]}"
        with _lock_for(tag):
            try:
                return tag, api.inspect_image(tag)["Id"]
            except docker.errors.ImageNotFound:
                pass
            _build(api, workspace, tag, settings, on_output=on_output, cancel=cancel)
            return tag, api.inspect_image(tag)["Id"]
    return DEFAULT_SANDBOX_IMAGE, _image_id(api, DEFAULT_SANDBOX_IMAGE, configured=False)


def _image_id(api: Any, image: str, *, configured: bool) -> str:
    import docker.errors

    try:
        return api.inspect_image(image)["Id"]
    except docker.errors.ImageNotFound:
        if configured:
            raise SandboxUnavailable(
                f"The image {image} (sandbox.image) is not on this machine: pull it (`docker pull {image}`) or build it, "
                'or set sandbox.image to an image you have, or set sandbox.mode = "local" to run unisolated.'
            ) from None
        raise SandboxUnavailable(
            f"The sandbox image {image} is not on this machine: build it with scripts/sandbox-engine.sh (in a paperlens "
            "checkout), or set sandbox.image to a Python image you have (e.g. python:3.11-slim pinned by digest), "
            'or set sandbox.mode = "local" to run unisolated.'
        ) from None


def _lock_for(tag: str) -> threading.Lock:
    with _build_locks_guard:
        return _build_locks.setdefault(tag, threading.Lock())


# --------------------------------------------------------------------------------------------
# The content hash
# --------------------------------------------------------------------------------------------


def workspace_image_hash(workspace: Path) -> str:
    """sha256 of the Dockerfile, the .dockerignore and the build-context files COPY/ADD take."""
    from docker.utils.build import PatternMatcher, exclude_paths

    root = workspace.resolve()
    dockerfile = (root / "Dockerfile").read_bytes()
    ignore_path = root / ".dockerignore"
    ignore = ignore_path.read_bytes() if ignore_path.is_file() else b""
    patterns = _ignore_patterns(ignore.decode("utf-8", errors="replace"))
    sources = copy_sources(dockerfile.decode("utf-8", errors="replace"))
    if sources is None or any(_is_whole_context(source) for source in sources):
        files = {rel for rel in exclude_paths(str(root), list(patterns), dockerfile="Dockerfile") if (root / rel).is_file()}
    else:
        matcher = PatternMatcher(list(patterns))
        files = set()
        for source in sources:
            files |= _expand(root, source, matcher)
    digest = hashlib.sha256(HASH_VERSION)
    for part in (dockerfile, ignore):
        digest.update(len(part).to_bytes(8, "big") + part)
    for rel in sorted(files):
        path = root / rel
        digest.update(rel.encode() + b"\0" + (b"x" if os.access(path, os.X_OK) else b"-") + _file_digest(path))
    return digest.hexdigest()


def _ignore_patterns(text: str) -> list[str]:
    """.dockerignore lines as docker-py reads them."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def _is_whole_context(source: str) -> bool:
    return source.strip("/") in ("", ".", "*") or source in ("./", "./*")


def copy_sources(dockerfile: str) -> list[str] | None:
    """The build-context sources of the Dockerfile's COPY/ADD instructions (not `--from` stages,
    not URLs); None when one cannot be resolved without running the build."""
    escape = "\\"
    lines = dockerfile.splitlines()
    for line in lines:  # parser directives come first, before any other line
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        key, _, value = stripped[1:].partition("=")
        if key.strip().lower() == "escape" and value.strip() in ("`", "\\"):
            escape = value.strip()
    instructions: list[str] = []
    current = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and current):
            continue
        if stripped.endswith(escape):
            current += stripped[:-1] + " "
            continue
        instructions.append(current + stripped)
        current = ""
    if current:
        instructions.append(current)
    sources: list[str] = []
    for instruction in instructions:
        word, _, rest = instruction.partition(" ")
        if word.upper() == "ONBUILD":
            continue
        if word.upper() not in ("COPY", "ADD"):
            continue
        rest = rest.strip()
        if "<<" in rest:
            return None
        args = rest.split()
        flags = [arg for arg in args if arg.startswith("--")]
        if any(flag.startswith("--from") for flag in flags):
            continue
        args = [arg for arg in args if not arg.startswith("--")]
        rest = " ".join(args)
        if rest.startswith("["):
            try:
                args = load_json(rest)
            except ValueError:  # not JSON, or nested past reading
                return None
            if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
                return None
        if len(args) < 2:
            return None
        for source in args[:-1]:
            if "://" in source or source.startswith("git@"):
                continue  # ADD from a URL: not in the build context
            if "$" in source:
                return None
            sources.append(source)
    return sources


def _expand(root: Path, source: str, matcher: Any) -> set[str]:
    """The files (relative to the context) one COPY source names, less what .dockerignore excludes."""
    cleaned = os.path.normpath(source.lstrip("/"))
    if cleaned.startswith(".."):
        return set()  # outside the context: the build fails on it, and the hash needs nothing
    found: set[str] = set()
    for match in glob.glob(str(root / cleaned), include_hidden=True):
        path = Path(match)
        if path.is_dir():
            for folder, _dirs, names in os.walk(path):
                for name in names:
                    found.add(str((Path(folder) / name).relative_to(root)))
        elif path.is_file():
            found.add(str(path.relative_to(root)))
    return {rel for rel in found if not matcher.matches(rel)}


def _file_digest(path: Path) -> bytes:
    stat = path.stat()
    key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    digest = _digests.get(key)
    if digest is None:
        sha = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        digest = _digests[key] = sha.digest()
    return digest


# --------------------------------------------------------------------------------------------
# The build
# --------------------------------------------------------------------------------------------


def _build(
    api: Any,
    workspace: Path,
    tag: str,
    settings: SandboxSettings,
    *,
    on_output: Callable[[str], None] | None,
    cancel: threading.Event | None,
) -> None:
    import docker.errors

    def say(text: str) -> None:
        if on_output is not None and text:
            on_output(text)

    network = "default" if settings.build_network else "none"
    say(f"[paperlens] building {tag} from the workspace's Dockerfile (network: {'on' if settings.build_network else 'off'})\n")
    workspace_key = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    log: list[str] = []
    error: str | None = None
    try:
        stream = api.build(
            path=str(workspace),
            dockerfile="Dockerfile",
            tag=tag,
            network_mode=network,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            labels={WORKSPACE_LABEL: workspace_key},
            timeout=BUILD_READ_TIMEOUT,
        )
        for chunk in stream:
            if cancel is not None and cancel.is_set():
                stream.close()
                raise Cancelled()
            text = chunk.get("stream") or ""
            if text:
                log.append(text)
                say(text)
            if "error" in chunk or "errorDetail" in chunk:
                error = chunk.get("error") or chunk.get("errorDetail", {}).get("message") or "the build failed"
                log.append(error + "\n")
                say(error + "\n")
    except docker.errors.APIError as err:
        error = err.explanation or str(err)
        log.append(str(error) + "\n")
    if error is not None:
        tail = "".join(log).rstrip().splitlines()[-BUILD_LOG_LINES:]
        hint = "" if settings.build_network else " (the build had no network: set sandbox.build_network = true if it downloads packages)"
        raise SandboxUnavailable(f"Building the workspace's Dockerfile failed{hint}: {error.strip()}\n" + "\n".join(tail))
    _remove_older(api, workspace_key, tag)


def _remove_older(api: Any, workspace_key: str, tag: str) -> None:
    """Images built earlier for the same workspace, other than `tag`: removed when nothing uses them."""
    import docker.errors

    try:
        images = api.images(filters={"label": f"{WORKSPACE_LABEL}={workspace_key}"})
    except docker.errors.APIError:
        return
    for image in images:
        tags = image.get("RepoTags") or []
        if tag in tags:
            continue
        for old in tags or [image["Id"]]:
            try:
                api.remove_image(old)
            except docker.errors.APIError:
                pass  # in use (a container made from it) or already gone
