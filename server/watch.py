"""Watching files on disk ourselves, for clients that cannot do it for us (no dynamic registration
of `workspace/didChangeWatchedFiles`). Events cross from watchdog's thread to the event loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from paperlens.pipeline.files import UnreadableFile, resolved_path
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

log = logging.getLogger("paperlens.server")
IGNORED_PARTS = frozenset({".git", ".venv", "venv", "__pycache__", "node_modules", ".mypy_cache", ".pytest_cache"})


class _Forward(FileSystemEventHandler):
    def __init__(self, loop: asyncio.AbstractEventLoop, on_change: Callable[[Path], None]) -> None:
        self._loop = loop
        self._on_change = on_change

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                path = Path(raw if isinstance(raw, str) else raw.decode())
                if not IGNORED_PARTS.intersection(path.parts):
                    self._loop.call_soon_threadsafe(self._on_change, path)


class DiskWatcher:
    """Calls `on_change(path)` on the event loop for every file created, changed, moved or deleted
    under the watched folders; the caller coalesces bursts."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_change: Callable[[Path], None]) -> None:
        self._handler = _Forward(loop, on_change)
        self._observer = Observer()
        self._observer.daemon = True

    def start(self, folders: Iterable[Path]) -> None:
        readable = []
        for folder in folders:
            try:
                readable.append(resolved_path(folder))
            except UnreadableFile as err:  # the load has said why it cannot read it
                log.warning("%s is not watched: %s", folder, err)
        for folder in dict.fromkeys(readable):
            if folder.is_dir():
                self._observer.schedule(self._handler, str(folder), recursive=True)
        self._observer.start()
        log.info("watching files on disk with watchdog (the client does not)")

    def stop(self) -> None:
        self._observer.stop()
