"""What an ESP-IDF 2nd-stage bootloader checks in an app image before it boots it (sans-IO), for the
simulated ESP32's boot log.

An image is a 24-byte header (magic ``0xE9``, segment count, flash mode/speed/size, entry point, then the
extended header whose last byte says whether a SHA-256 is appended), its segments (load address, length,
bytes), padding up to a 16-byte boundary whose last byte is the checksum (``0xEF`` XOR every segment byte),
then the optional SHA-256 of everything before it. An ESP-IDF app's first segment starts with its
``esp_app_desc_t`` (magic ``0xABCD5432``: version, project name, build time and date, IDF version, ELF
SHA-256).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Final

IMAGE_MAGIC: Final = 0xE9
APP_DESC_MAGIC: Final = 0xABCD5432
HEADER_LEN: Final = 24
MAX_SEGMENTS: Final = 16
APP_DESC: Final = struct.Struct("<II8x32s32s16s16s32s32s")


@dataclass(frozen=True)
class Segment:
    load: int
    offset: int  # of its bytes, from the image start
    length: int


@dataclass(frozen=True)
class AppImage:
    entry: int
    segments: tuple[Segment, ...]
    size: int  # header to checksum (and digest, if appended)
    md5: str
    project: str | None = None
    version: str | None = None
    built: str | None = None
    idf: str | None = None
    elf_sha256: str | None = None


def _text(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("ascii", "replace")


def parse_app_image(data: bytes | bytearray | memoryview, limit: int) -> AppImage | str:
    """The image at the start of ``data`` (at most ``limit`` bytes long), or why the bootloader refuses
    it, in its own words."""
    view = memoryview(data)[:limit]
    if len(view) < HEADER_LEN or view[0] != IMAGE_MAGIC:
        first = view[0] if len(view) else 0xFF
        return "image has invalid magic byte (nothing flashed)" if first == 0xFF else "invalid magic byte"
    count = view[1]
    entry = struct.unpack_from("<I", view, 4)[0]
    hash_appended = view[23]
    if not 0 < count <= MAX_SEGMENTS:
        return f"image has {count} segments"
    segments: list[Segment] = []
    at = HEADER_LEN
    check = 0xEF
    for _ in range(count):
        if at + 8 > len(view):
            return "image is truncated"
        load, length = struct.unpack_from("<II", view, at)
        at += 8
        if at + length > len(view):
            return f"segment {len(segments)} runs past the end of the partition"
        segments.append(Segment(load, at, length))
        # XOR of the segment bytes, eight at a time
        body = view[at : at + length]
        whole = len(body) // 8 * 8
        acc = 0
        for (w,) in struct.iter_unpack("<Q", body[:whole]):
            acc ^= w
        for b in acc.to_bytes(8, "little") + bytes(body[whole:]):
            check ^= b
        at += length
    at += 15 - at % 16  # padding: the checksum byte ends a 16-byte block
    if at >= len(view):
        return "image is truncated"
    if view[at] != check:
        return f"Checksum failed. Calculated 0x{check:x} read 0x{view[at]:x}"
    size = at + 1
    if hash_appended:
        if size + 32 > len(view):
            return "image is truncated"
        if hashlib.sha256(view[:size]).digest() != bytes(view[size : size + 32]):
            return "Image hash failed - image is corrupt"
        size += 32
    md5 = hashlib.md5(view[:size]).hexdigest()
    desc = segments[0]
    if desc.length >= APP_DESC.size:
        magic, _secure, version, project, time, date, idf, sha = APP_DESC.unpack_from(view, desc.offset)
        if magic == APP_DESC_MAGIC:
            return AppImage(
                entry, tuple(segments), size, md5, _text(project), _text(version),
                f"{_text(date)} {_text(time)}", _text(idf), bytes(sha).hex(),
            )  # fmt: skip
    return AppImage(entry, tuple(segments), size, md5)


def build_app_image(
    project: str, version: str, idf: str, built: tuple[str, str], code: bytes, entry: int = 0x400D1024
) -> bytes:
    """A small, valid ESP32 app image: a flash-mapped data segment that starts with the app description, a
    code segment holding ``code``, checksum and SHA-256 (what the simulated board ships in flash)."""
    date, time = built
    elf_sha = hashlib.sha256(code).digest()
    texts = (version, project, time, date, idf)
    desc = APP_DESC.pack(APP_DESC_MAGIC, 0, *(t.encode() for t in texts), elf_sha).ljust(256, b"\x00")
    segments = ((0x3F400020, desc), (0x400D0020, code + b"\x00" * (-len(code) % 4)))
    out = bytearray(struct.pack("<BBBBI", IMAGE_MAGIC, len(segments), 2, 0x20, entry))  # DIO, 40 MHz, 4 MB
    out += struct.pack("<BBBBHBHH4xB", 0xEE, 0, 0, 0, 0, 0, 0, 399, 1)  # ESP32, any rev, SHA-256 follows
    check = 0xEF
    for load, data in segments:
        out += struct.pack("<II", load, len(data)) + data
        for b in data:
            check ^= b
    out += b"\x00" * (15 - len(out) % 16) + bytes((check,))
    return bytes(out + hashlib.sha256(out).digest())
