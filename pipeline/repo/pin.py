"""The pin step: every distribution a repository needs, locked at one exact version, and the Dockerfile
that installs what the sandbox image lacks.

`pin(repo)` reads the repository's third-party imports and declared requirements the way the
dependency check does (`sandbox/deps.py`), adds what those distributions depend on (markers
evaluated for the image's Python), and takes each version from where the run will find it:

1. `image`: installed in the sandbox image (`sandbox.image`, else the default base image), read by
   one small script run in that image through the sandbox;
2. `environment`: installed in paperlens' own environment, when the image lacks it (or Docker
   cannot be reached, which the record's message says);
3. `unknown`: neither has it; the lock carries a commented line asking for a pin by hand.

It writes `requirements.lock` (a pip requirements file the dependency check reads as a lock: one
`name==version` a line, complete, so pip needs no resolving: `--no-deps`), adds to
`requirements.txt` every imported distribution no declaration names yet (unpinned: the lock pins
it; the user's lines stay), and rewrites the `Dockerfile` (`dockerfile_text`): the base image by
registry digest when it has one, by tag otherwise, and a pip install of the lock when something
must come from outside the image. Nothing raises for an environment problem: it is in the message.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as PackagingRequirement

from ...schemas.repo import PinnedDistribution, PinRecord
from ...schemas.smoke import DEFAULT_SANDBOX_IMAGE, SandboxSettings
from ..files import write_atomically
from ..sandbox import SandboxUnavailable, docker_run, run_smoke
from ..sandbox.deps import (
    Requirement,
    covering_names,
    declared_requirements,
    normalize,
    third_party_imports,
)

DOCKERFILE_HEADER = "# Written by paperlens pin: the image the smoke runs and the reproduction run in."
LOCK_FILE = "requirements.lock"  # deps.py reads `requirements*.lock` as a lock file
REQUIREMENTS_FILE = "requirements.txt"
DOCKERFILE = "Dockerfile"

# Run in the image with `python3 -I` (the working directory stays off sys.path): every installed
# distribution (the first on sys.path wins, as an import would), what each requires, the marker
# values its requirements are evaluated with, and whether pip is there to install anything.
_PROBE_SCRIPT = """
import importlib.metadata, importlib.util, json, os, platform, sys
installed = {}
for distribution in importlib.metadata.distributions():
    name = distribution.metadata["Name"]
    if name:
        installed.setdefault(name, {"version": distribution.version, "requires": distribution.requires or []})
markers = {
    "implementation_name": sys.implementation.name,
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_python_implementation": platform.python_implementation(),
    "platform_system": platform.system(),
    "python_full_version": platform.python_version(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}
print(json.dumps({"installed": installed, "markers": markers, "pip": importlib.util.find_spec("pip") is not None}))
"""


def dockerfile_text(base_image: str, digest: str | None, install: list[PinnedDistribution]) -> str:
    """The repository's Dockerfile: the base image (by digest when known), the sandbox's working
    directory, and a pip install of `requirements.lock` when `install` names what the image lacks."""
    lines = [DOCKERFILE_HEADER]
    if digest:
        lines += [f"# {base_image}, pinned by its registry digest: a rebuild starts from the same image.", f"FROM {base_image}@{digest}"]
    else:
        lines += [f"# {base_image} is a local image without a registry digest, so it is referenced by tag.", f"FROM {base_image}"]
    lines += ["# The sandbox mounts the repository here, read-only.", "WORKDIR /workspace"]
    if install:
        missing = ", ".join(f"{distribution.distribution}=={distribution.version}" for distribution in install)
        lines += [
            f"# Not in the base image: {missing}.",
            "# The lock is complete (dependencies included), so pip installs exactly it: --no-deps. Debian marks its",
            "# Python as externally managed (PEP 668); installing into it is what an image is for.",
            f"COPY {LOCK_FILE} /tmp/{LOCK_FILE}",
            f"RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir --no-deps -r /tmp/{LOCK_FILE}",
        ]
    else:
        lines.append(f"# Every distribution in {LOCK_FILE} is already in the base image: nothing to install.")
    return "\n".join(lines) + "\n"


def _written_by_paperlens(dockerfile: Path) -> bool:
    """Whether the Dockerfile is absent or ours to rewrite (never a user's)."""
    try:
        return dockerfile.read_text(encoding="utf-8", errors="replace").startswith(DOCKERFILE_HEADER)
    except FileNotFoundError:
        return True


@dataclass(frozen=True)
class _Installed:
    name: str  # as its metadata spells it
    version: str
    requires: tuple[str, ...]


@dataclass(frozen=True)
class _Image:
    id: str
    digest: str | None
    installed: dict[str, _Installed]  # normalised name → distribution
    markers: dict[str, str]
    has_pip: bool


def pin(repo: Path, settings: SandboxSettings | None = None) -> PinRecord:
    """Locks the repository's distributions (`requirements.lock`), completes `requirements.txt` and
    rewrites the `Dockerfile` for the sandbox image `settings` names; see the module's docstring."""
    repo = Path(repo).resolve()
    settings = settings or SandboxSettings()
    reference = settings.image or DEFAULT_SANDBOX_IMAGE
    base_image, _, given_digest = reference.partition("@")
    requirements, _found = declared_requirements(repo)
    wanted, undeclared = _wanted(repo, requirements)

    read = _read_image(reference, settings)
    image = read if isinstance(read, _Image) else None
    notes = [] if image else [read]
    distributions, conflicts = _resolve(wanted, image)
    install = [distribution for distribution in distributions if distribution.source == "environment"]
    digest = given_digest or (image.digest if image else None)

    write_atomically(repo / LOCK_FILE, _lock_text(distributions, reference, image))
    if undeclared:
        write_atomically(repo / REQUIREMENTS_FILE, _requirements_text(repo / REQUIREMENTS_FILE, undeclared))
    if _written_by_paperlens(repo / DOCKERFILE):
        write_atomically(repo / DOCKERFILE, dockerfile_text(base_image, digest, install))
    else:
        notes.append(f"{DOCKERFILE} is not paperlens' and is kept as it is: make it install {LOCK_FILE}")

    if image is not None:
        notes.append(
            f"the Dockerfile pins {base_image} by its digest {digest}"
            if digest
            else f"{base_image} is a local image with no registry digest (image id {image.id}), so the Dockerfile names it by tag"
        )
    notes.append(_summary(distributions, reference))
    notes += conflicts
    if undeclared:
        notes.append(f"added to {REQUIREMENTS_FILE}: {', '.join(undeclared)}")
    if install and image is not None and not image.has_pip:
        notes.append(f"{reference} has no pip, so the Dockerfile's install step fails: set sandbox.image to a base image with pip")
    if install and not settings.build_network:
        notes.append("building the Dockerfile downloads packages: set sandbox.build_network = true (or use a package mirror)")
    return PinRecord(
        lock_file=LOCK_FILE, distributions=distributions, base_image=base_image, base_digest=digest, message="; ".join(notes)
    )


def _wanted(repo: Path, requirements: list[Requirement]) -> tuple[dict[str, tuple[str, list[str]]], list[str]]:
    """The distributions to lock (normalised name → (name, the modules imported from it)): what the
    code imports and what the workspace requires (tooling only when imported); and the imported ones
    no requirement declares."""
    declared = {normalize(requirement.name): requirement.name for requirement in requirements if requirement.kind == "requirement"}
    wanted: dict[str, tuple[str, list[str]]] = {}
    undeclared: dict[str, str] = {}
    for site, distribution in third_party_imports(repo):
        key = normalize(distribution)
        covering = covering_names(site.module, distribution) & declared.keys()
        if covering and key not in covering:
            key = min(covering)  # an alternative the workspace declares (e.g. opencv-python-headless for cv2)
        elif not covering:
            undeclared.setdefault(key, distribution)
        modules = wanted.setdefault(key, (declared.get(key, distribution), []))[1]
        if site.module not in modules:
            modules.append(site.module)
    for requirement in requirements:
        if requirement.kind == "requirement" and not requirement.tooling:
            wanted.setdefault(normalize(requirement.name), (requirement.name, []))
    return wanted, [undeclared[key] for key in sorted(undeclared)]


def _read_image(reference: str, settings: SandboxSettings) -> _Image | str:
    """The image's id, registry digest and installed distributions; a message when they cannot be read."""
    unavailable = "Docker is unavailable, so the versions come from paperlens' environment and may differ from the image's"
    try:
        client = docker_run.client()
    except SandboxUnavailable as err:
        return f"{unavailable} ({err})"
    import docker.errors  # there: client() says so otherwise

    try:
        with docker_run.engine_errors():
            image = client.images.get(reference)
    except SandboxUnavailable as err:
        return f"{unavailable} ({err})"
    except docker.errors.ImageNotFound:
        return f"the image {reference} is not on this machine, so the versions come from paperlens' environment"
    except docker.errors.APIError as err:
        return f"Docker refused to inspect {reference} ({err.explanation or err}), so the versions come from paperlens' environment"
    # The probe runs in exactly this image (by id) and in Docker even when smoke runs are local:
    # the lock describes the Dockerfile's image.
    probe = settings.model_copy(
        update={"mode": "docker", "image": image.id, "command": ["python3", "-I", "-c", _PROBE_SCRIPT], "network": False}
    )
    with tempfile.TemporaryDirectory(prefix="paperlens-pin-") as folder:
        os.chmod(folder, 0o755)  # the sandbox's user must enter its working directory
        result = run_smoke(Path(folder), probe)
    lines = result.output.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if result.status == "passed" and lines else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return f"reading what {reference} has installed failed ({result.message}), so the versions come from paperlens' environment"
    installed = {
        normalize(name): _Installed(name, entry["version"], tuple(entry["requires"])) for name, entry in data["installed"].items()
    }
    return _Image(image.id, _registry_digest(reference, image.attrs.get("RepoDigests") or []), installed, data["markers"], data["pip"])


def _registry_digest(reference: str, repo_digests: list[str]) -> str | None:
    """The digest of the repository `reference` names, else the image's first: `sha256:…`."""
    name = reference.partition("@")[0]
    repository = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name  # `host:5000/image:tag`
    digests = [entry.partition("@") for entry in repo_digests]
    matching = [digest for named, _, digest in digests if named == repository]
    return (matching or [digest for _, _, digest in digests] or [None])[0]


def _resolve(wanted: dict[str, tuple[str, list[str]]], image: _Image | None) -> tuple[list[PinnedDistribution], list[str]]:
    """Each wanted distribution and, transitively, what it requires, at the version the image has,
    else paperlens' environment's; and, as messages, the requirements a locked version fails.

    An image's version that fails a requirement is replaced by the environment's when that one
    satisfies it (the Dockerfile installs it over the image's), until nothing more changes."""
    markers = (image.markers if image else {}) | {"extra": ""}
    from_environment: set[str] = set()
    while True:
        pinned, found = _lock_versions(wanted, image, from_environment, markers)
        conflicts = _conflicts(pinned, found, markers)
        replaced = {
            key
            for key, requirement, _needed_by in conflicts
            if pinned[key].source == "image"
            and (here := _installed_here(pinned[key].distribution)) is not None
            and requirement.specifier.contains(here.version, prereleases=True)
        }
        if replaced <= from_environment:
            break
        from_environment |= replaced
    messages = [
        f"{needed_by.distribution} {needed_by.version} (from the {needed_by.source}) needs "
        f"{requirement.name}{requirement.specifier}, but the lock has {pinned[key].version} (from the {pinned[key].source})"
        for key, requirement, needed_by in conflicts
    ]
    return [pinned[key] for key in sorted(pinned)], messages


def _lock_versions(
    wanted: dict[str, tuple[str, list[str]]], image: _Image | None, from_environment: set[str], markers: dict[str, str]
) -> tuple[dict[str, PinnedDistribution], dict[str, _Installed]]:
    """One pass: every distribution reached from `wanted` (normalised name → pinned), and the
    installed distributions its versions come from."""
    wanted = dict(wanted)
    pending = sorted(wanted)
    pinned: dict[str, PinnedDistribution] = {}
    found: dict[str, _Installed] = {}
    while pending:
        key = pending.pop()
        if key in pinned:
            continue
        name, modules = wanted[key]
        source = "image"
        installed = image.installed.get(key) if image and key not in from_environment else None
        if installed is None:
            source, installed = "environment", _installed_here(name)
        if installed is None:
            pinned[key] = PinnedDistribution(distribution=name, version=None, modules=modules, source="unknown")
            continue
        found[key] = installed
        pinned[key] = PinnedDistribution(distribution=installed.name, version=installed.version, modules=modules, source=source)
        for requirement in _requirements_of(installed, markers):
            dependency = normalize(requirement.name)
            if dependency not in wanted:
                wanted[dependency] = requirement.name, []
                pending.append(dependency)
    return pinned, found


def _conflicts(
    pinned: dict[str, PinnedDistribution], found: dict[str, _Installed], markers: dict[str, str]
) -> list[tuple[str, PackagingRequirement, PinnedDistribution]]:
    """(the locked distribution, the requirement it fails, who requires it), in name order."""
    conflicts = []
    for key in sorted(found):
        for requirement in _requirements_of(found[key], markers):
            dependency = normalize(requirement.name)
            version = pinned[dependency].version
            if version is not None and not requirement.specifier.contains(version, prereleases=True):
                conflicts.append((dependency, requirement, pinned[key]))
    return conflicts


def _installed_here(name: str) -> _Installed | None:
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return _Installed(distribution.metadata["Name"] or name, distribution.version, tuple(distribution.requires or ()))


def _requirements_of(installed: _Installed, markers: dict[str, str]) -> list[PackagingRequirement]:
    """What a distribution requires where it runs (markers evaluated; no extras)."""
    requirements = []
    for text in installed.requires:
        try:
            requirement = PackagingRequirement(text)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate(markers):
            requirements.append(requirement)
    return requirements


def _lock_text(distributions: list[PinnedDistribution], reference: str, image: _Image | None) -> str:
    versions = "# and what those depend on, at one exact version: as installed in"
    lines = [f"# {LOCK_FILE}, written by paperlens pin: every distribution the code imports or the requirements name,"]
    if image:
        lines += [
            f"{versions} the image {reference}",
            f"# (id {image.id}), else (or where the image's fails a requirement) in paperlens' environment.",
        ]
    else:
        lines += [f"{versions} paperlens' environment", f"# (the image {reference} could not be read)."]
    lines.append(f"# Complete: install it with `pip install --no-deps -r {LOCK_FILE}`.")
    for distribution in distributions:
        if distribution.version is None:
            name = distribution.distribution
            lines.append(f"# {name}: no version found in the image or paperlens' environment; pin it by hand ({name}==<version>)")
        else:
            lines.append(f"{distribution.distribution}=={distribution.version}")
    return "\n".join(lines) + "\n"


def _requirements_text(path: Path, undeclared: list[str]) -> str:
    """requirements.txt as the user wrote it, with the undeclared distributions added after it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    if text and not text.endswith("\n"):
        text += "\n"
    added = "".join(f"{name}\n" for name in undeclared)
    return f"{text}# Imported by the code; the exact versions are in {LOCK_FILE} (paperlens pin).\n{added}"


def _summary(distributions: list[PinnedDistribution], image: str) -> str:
    by_source = {source: [d for d in distributions if d.source == source] for source in ("image", "environment", "unknown")}
    counts = []
    if by_source["image"]:
        counts.append(f"{len(by_source['image'])} as installed in {image}")
    if by_source["environment"]:
        names = ", ".join(f"{d.distribution}=={d.version}" for d in by_source["environment"])
        counts.append(f"{len(by_source['environment'])} from paperlens' environment, for the Dockerfile to install ({names})")
    summary = f"locked {len(distributions) - len(by_source['unknown'])} distributions: {', '.join(counts) or 'none'}"
    if by_source["unknown"]:
        names = ", ".join(d.distribution for d in by_source["unknown"])
        summary += f"; no version found for {names}: pin it by hand in {LOCK_FILE}"
    return summary


