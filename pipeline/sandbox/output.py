"""A run's output, streamed as it comes and kept within a byte limit.

What is kept when the output is over the limit: the first quarter of the limit (the command's start,
collection errors, the first exception of a cascade) and the last three quarters (where a traceback
and pytest's summary are), with one marker line between them that says how much was cut. The cut
falls on line boundaries where one is near, so that no traceback line is kept half.

What is streamed: every chunk as it arrives while the total is within the limit; past the limit,
one notice, and at the end the marker and the kept tail (which may repeat some lines streamed just
before the stop). So a follower of the stream sees what the result keeps, and at most about twice
the limit.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

HEAD_SHARE = 4  # the head keeps 1/HEAD_SHARE of the limit, the tail the rest
LINE_SNAP = 4096  # how far a cut may move to fall on a line boundary


class CappedOutput:
    def __init__(self, limit: int, on_output: Callable[[str], None] | None = None) -> None:
        self.limit = limit
        self.head_limit = limit // HEAD_SHARE
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()  # the last tail_limit bytes after the head
        self.total = 0
        self._on_output = on_output
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stopped = False

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def feed(self, data: bytes) -> None:
        if not data:
            return
        chunk = data
        start = self.total
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]
        if self._on_output is None or self._stopped:
            return
        if self.total <= self.limit:
            self._emit(self._decoder.decode(chunk, final=False))
            return
        self._stopped = True
        self._emit(self._decoder.decode(chunk[: max(0, self.limit - start)], final=True))
        self._emit(
            f"\n[paperlens: the output is over {self.limit:,} bytes; streaming stops here and its last "
            f"{self.tail_limit:,} bytes follow when the run ends]\n"
        )

    def _emit(self, text: str) -> None:
        if text and self._on_output is not None:
            self._on_output(text)

    def finish(self) -> str:
        """The kept output as text; streams what the stream has not shown yet."""
        if not self.truncated:
            text = (self.head + self.tail).decode("utf-8", errors="replace")
            if self._on_output is not None and not self._stopped:
                self._emit(self._decoder.decode(b"", final=True))
            return text
        head = bytes(self.head)
        newline = head.rfind(b"\n")
        if newline >= len(head) - LINE_SNAP:
            head = head[: newline + 1]
        tail = bytes(self.tail)
        newline = tail.find(b"\n", 0, LINE_SNAP)
        if newline >= 0:
            tail = tail[newline + 1 :]
        cut = self.total - len(head) - len(tail)
        marker = f"[... {cut:,} bytes of output cut by paperlens (output limit {self.limit:,} bytes) ...]\n"
        head_text = head.decode("utf-8", errors="replace")
        if head_text and not head_text.endswith("\n"):
            head_text += "\n"
        tail_text = tail.decode("utf-8", errors="replace")
        if self._on_output is not None:
            self._emit(marker + tail_text)
        return head_text + marker + tail_text
