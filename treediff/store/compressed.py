"""Knowing where a compressed log ends: a zstd frame walker and the truncation error.

The zstd decompressor's stream reader returns what it could decode and then a
plain end of stream when the file stops in the middle of a frame, so a
truncated ``.zst`` log looked complete.  :class:`ZstdFrameWalker` follows the
compressed bytes as the decompressor reads them, frame header by block header
(block bodies are skipped, not decoded: a few arithmetic steps per 128 KiB
block), and says at the end whether the stream stopped on a frame boundary.
"""
from __future__ import annotations

import enum
from typing import Any, cast

from treediff.model.errors import InputError

_ZSTD_MAGIC = 0xFD2FB528
#: Skippable frames: magic 0x184D2A50 to 0x184D2A5F, a 4-byte size, that many bytes of user data.
_SKIPPABLE_MASK, _SKIPPABLE_MAGIC = 0xFFFFFFF0, 0x184D2A50


class TruncatedInput(InputError):
    """A compressed input ends before its compressed data does (the file was cut short).

    ``offset`` is the file's length in bytes (where the data stops) and ``start``
    the byte where the unfinished frame (zstd) or member (gzip) began; the
    message names neither file (the reader that knows the name adds it).
    """

    def __init__(self, message: str, offset: int, start: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset
        self.start = start


class _State(enum.Enum):
    MAGIC = enum.auto()          # 4 bytes: a frame's magic number
    DESCRIPTOR = enum.auto()     # 1 byte: the frame header descriptor
    SKIP_SIZE = enum.auto()      # 4 bytes: a skippable frame's size
    BLOCK_HEADER = enum.auto()   # 3 bytes: last-block flag, type, size
    INVALID = enum.auto()        # not zstd as far as the walker knows: the decompressor will say why


class ZstdFrameWalker:
    """Follows a zstd stream's frame structure from the compressed bytes fed to it (see the module doc)."""

    def __init__(self) -> None:
        self._state = _State.MAGIC
        self._pending = bytearray()
        self._skip = 0              # body bytes still to pass over
        self._after_skip = _State.MAGIC
        self._checksum = False      # the open frame ends with a 4-byte content checksum
        self.position = 0           # compressed bytes seen
        self.frame_start = 0        # where the frame being read began

    @property
    def at_boundary(self) -> bool:
        """True when the bytes seen so far end exactly after a whole frame (or the walker lost the thread)."""
        return self._state is _State.INVALID or (
            self._state is _State.MAGIC and self._skip == 0 and not self._pending)

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n and self._state is not _State.INVALID:
            if self._skip:
                step = min(self._skip, n - i)
                self._skip -= step
                i += step
                if self._skip == 0:
                    self._state = self._after_skip
                continue
            want = {_State.MAGIC: 4, _State.DESCRIPTOR: 1, _State.SKIP_SIZE: 4, _State.BLOCK_HEADER: 3}[self._state]
            if self._state is _State.MAGIC and not self._pending:
                self.frame_start = self.position + i
            take = min(want - len(self._pending), n - i)
            self._pending += data[i:i + take]
            i += take
            if len(self._pending) == want:
                field = int.from_bytes(self._pending, "little")
                self._pending.clear()
                self._advance(field)
        self.position += n

    def _advance(self, field: int) -> None:
        if self._state is _State.MAGIC:
            if field == _ZSTD_MAGIC:
                self._state = _State.DESCRIPTOR
            elif field & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
                self._state = _State.SKIP_SIZE
            else:
                self._state = _State.INVALID
        elif self._state is _State.SKIP_SIZE:
            self._skip_then(field, _State.MAGIC)
        elif self._state is _State.DESCRIPTOR:
            fcs_flag, single, dict_flag = field >> 6, (field >> 5) & 1, field & 3
            self._checksum = bool((field >> 2) & 1)
            if (field >> 3) & 1:  # reserved bit: not a frame the decoder accepts
                self._state = _State.INVALID
                return
            fcs_bytes = (1 if single else 0, 2, 4, 8)[fcs_flag]
            header_rest = (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + fcs_bytes
            self._skip_then(header_rest, _State.BLOCK_HEADER)
        else:  # BLOCK_HEADER
            last, kind, size = field & 1, (field >> 1) & 3, field >> 3
            if kind == 3:
                self._state = _State.INVALID
                return
            body = 1 if kind == 1 else size  # an RLE block holds one byte
            if last:
                self._skip_then(body + (4 if self._checksum else 0), _State.MAGIC)
            else:
                self._skip_then(body, _State.BLOCK_HEADER)

    def _skip_then(self, count: int, state: _State) -> None:
        self._skip, self._after_skip = count, state
        self._state = state if count == 0 else self._state

    def truncation(self) -> TruncatedInput | None:
        """The error to raise when the stream ended here: None if it ended on a frame boundary."""
        if self.at_boundary:
            return None
        return TruncatedInput(
            f"truncated zstd data: the file ends at byte {self.position:,}, inside the compressed frame that "
            f"starts at byte {self.frame_start:,} (the file was cut short: copy it again)",
            self.position, self.frame_start)


class WalkedSource:
    """The raw stream as the zstd decompressor reads it, every byte shown to a :class:`ZstdFrameWalker`."""

    def __init__(self, raw: Any, walker: ZstdFrameWalker) -> None:
        self._raw, self.walker = raw, walker

    def read(self, n: int = -1) -> bytes:
        data = cast(bytes, self._raw.read(n))
        self.walker.feed(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def gzip_truncation(offset: int) -> TruncatedInput:
    """The error for a gzip stream that ends before its end-of-stream marker."""
    return TruncatedInput(
        f"truncated gzip data: the file ends at byte {offset:,}, before the end-of-stream marker "
        "(the file was cut short: copy it again)", offset)
