"""Sizes declared in a VTK file's header, checked against the file's length before VTK reads it.

VTK allocates what a header declares before it reads the data: a 1 KB ``.vtp`` claiming 4·10⁹
points makes it throw ``std::bad_alloc``, which no Python code can catch (the process aborts and
unsaved work in the GUI is lost). Every value takes at least one byte in the file (ASCII, base64 or
raw binary), and deflate packs at most 1032 bytes into one (zlib's limit; LZ4's is lower), so a
header may declare at most ``len(file)`` values, or ``MAX_COMPRESSION_RATIO · len(file)`` bytes of
values when the file is compressed. Anything larger cannot be a real file and is refused here.

``check_vtk_sizes(raw)`` returns None or a message saying which declared size is impossible.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct

MAX_COMPRESSION_RATIO = 1032
"""Deflate's largest possible ratio of unpacked to packed bytes (each value is at least one byte)."""

_XML_TAG_RE = re.compile(rb"<(Piece|DataArray)\b([^>]*)>", re.S)
_APPENDED_RE = re.compile(rb"<AppendedData\b([^>]*)>\s*_")
_ATTR_RE = re.compile(rb'([A-Za-z_]+)\s*=\s*"([^"]*)"')
_PIECE_COUNTS = ("NumberOfPoints", "NumberOfVerts", "NumberOfLines", "NumberOfStrips", "NumberOfPolys",
                 "NumberOfCells")
_LEGACY_KEYWORDS = (b"POINTS", b"VERTICES", b"LINES", b"POLYGONS", b"TRIANGLE_STRIPS", b"CELLS",
                    b"CELL_TYPES", b"POINT_DATA", b"CELL_DATA", b"OFFSETS", b"CONNECTIVITY", b"DIMENSIONS",
                    b"FIELD", b"SCALARS", b"COLOR_SCALARS", b"LOOKUP_TABLE", b"VECTORS", b"NORMALS",
                    b"TEXTURE_COORDINATES", b"TENSORS", b"X_COORDINATES", b"Y_COORDINATES",
                    b"Z_COORDINATES", b"METADATA", b"INFORMATION")
_LEGACY_LINE_RE = re.compile(rb"^[ \t]*(" + b"|".join(_LEGACY_KEYWORDS) + rb")\b([^\n]*)$", re.M)
_FIELD_ARRAY_RE = re.compile(rb"^[ \t]*(\S+)[ \t]+(\d+)[ \t]+(\d+)[ \t]+([A-Za-z_]+)[ \t]*\r?$", re.M)
_FIELD_LINE_RE = re.compile(rb"^[ \t]*FIELD\b", re.M)
_INT_TOKEN_RE = re.compile(rb"^[-+]?\d+$")


def _too_large(what: str, n: int, length: int, compressed: bool) -> str:
    return (f"the header declares {n:,} {what}, more than a file of {length:,} bytes"
            f"{' (compressed)' if compressed else ''} can hold: the file is damaged or not a real mesh")


def check_vtk_sizes(raw: bytes) -> str | None:
    """None when every size the header of a VTK file (XML ``.vtp`` or legacy ``.vtk``) declares
    fits in the file, else a message naming the impossible one."""
    if raw.lstrip()[:5] == b"<?xml" or b"<VTKFile" in raw[:4096]:
        return _check_xml(raw)
    return _check_legacy(raw)


def _int_attr(attrs: dict[bytes, bytes], name: str) -> int | None | str:
    """The attribute as a non-negative int, None when absent, or a message when it is not one."""
    text = attrs.get(name.encode())
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit():
        return f"the header's {name}={text[:20].decode('ascii', 'replace')!r} is not a whole number"
    return int(text)


def _check_xml(raw: bytes) -> str | None:
    length = len(raw)
    end = raw.find(b"<AppendedData")
    head = raw if end < 0 else raw[:end]
    root = re.search(rb"<VTKFile\b([^>]*)>", head)
    root_attrs = dict(_ATTR_RE.findall(root.group(1))) if root else {}
    compressed = bool(root_attrs.get(b"compressor", b"").strip())
    budget = length * (MAX_COMPRESSION_RATIO if compressed else 1)
    totals = {name: 0 for name in _PIECE_COUNTS}
    largest = 0  # the most tuples an array without NumberOfTuples can take (points or cells of a piece)
    arrays: list[tuple[int, int | None]] = []
    binary = _BinaryHeaders(raw, root_attrs, compressed, budget)
    for match in _XML_TAG_RE.finditer(head):
        tag, attrs = match.group(1), dict(_ATTR_RE.findall(match.group(2)))
        if tag == b"Piece":
            piece_cells = 0
            for name in _PIECE_COUNTS:
                n = _int_attr(attrs, name)
                if isinstance(n, str):
                    return n
                if n is not None:
                    totals[name] += n
                    if name != "NumberOfPoints":
                        piece_cells += n
                    largest = max(largest, n)
            largest = max(largest, piece_cells + 1)  # offsets arrays hold cells + 1 values
        else:
            ncomp, ntup = _int_attr(attrs, "NumberOfComponents"), _int_attr(attrs, "NumberOfTuples")
            for n in (ncomp, ntup):
                if isinstance(n, str):
                    return n
            arrays.append((1 if ncomp is None else ncomp, ntup))
            problem = binary.check(attrs, match.end())
            if problem:
                return problem
    if 3 * totals["NumberOfPoints"] > budget:
        return _too_large("points", totals["NumberOfPoints"], length, compressed)
    cells = sum(v for k, v in totals.items() if k != "NumberOfPoints")
    if cells > budget:
        return _too_large("cells", cells, length, compressed)
    for ncomp, ntup in arrays:
        values = ncomp * (largest if ntup is None else ntup)
        if ncomp > budget or values > budget:
            return _too_large("array values", values, length, compressed)
    return None


def _check_legacy(raw: bytes) -> str | None:
    length = len(raw)
    first = raw.find(b"\n", raw.find(b"\n") + 1) + 1  # past the version line and the free-text title
    if first <= 0:
        return None
    for match in _LEGACY_LINE_RE.finditer(raw, first):
        keyword, rest = match.group(1), match.group(2)
        numbers = [int(x) for x in rest.split() if _INT_TOKEN_RE.match(x)]
        if any(n < 0 for n in numbers):
            return f"the header's {keyword.decode()} line declares a negative size"
        if keyword == b"DIMENSIONS" and numbers and math.prod(numbers) > length:
            return _too_large("grid points", math.prod(numbers), length, False)
        factor = 3 if keyword == b"POINTS" else 1
        for n in numbers:
            if factor * n > length:
                what = "points" if keyword == b"POINTS" else f"items on its {keyword.decode()} line"
                return _too_large(what, n, length, False)
    field = _FIELD_LINE_RE.search(raw, first)
    for match in _FIELD_ARRAY_RE.finditer(raw, field.start()) if field else ():
        # FIELD arrays: name components tuples type
        n = int(match.group(2)) * int(match.group(3))
        if n > length:
            return _too_large(f"values in field array {match.group(1)[:30].decode('ascii', 'replace')!r}", n,
                              length, False)
    return None


class _BinaryHeaders:
    """The size header VTK reads before each binary array (inline base64 or appended raw/base64):
    uncompressed, one integer (the byte count); compressed, [blocks, block size, last block size,
    packed size of each block]. VTK allocates from these numbers too."""

    def __init__(self, raw: bytes, root_attrs: dict[bytes, bytes], compressed: bool, budget: int):
        self.raw, self.compressed, self.budget = raw, compressed, budget
        self.ws = 8 if root_attrs.get(b"header_type", b"UInt32").strip() == b"UInt64" else 4
        big = root_attrs.get(b"byte_order", b"LittleEndian").strip() == b"BigEndian"
        self.fmt = (">" if big else "<") + ("Q" if self.ws == 8 else "I")
        appended = _APPENDED_RE.search(raw)
        self.appended_start = appended.end() if appended else -1
        self.appended_base64 = bool(appended) and dict(_ATTR_RE.findall(appended.group(1))).get(
            b"encoding", b"base64").strip() != b"raw"

    def _ints(self, source: bytes, start: int, count: int, base64_text: bool) -> list[int] | None:
        """``count`` header integers at ``start`` of raw bytes or base64 text (None if cut short)."""
        need = count * self.ws
        if base64_text:
            chars = source[start:start + 4 * -(-need // 3)]
            try:
                data = base64.b64decode(chars + b"=" * (-len(chars) % 4))
            except (binascii.Error, ValueError):
                return None
        else:
            data = source[start:start + need]
        if len(data) < need:
            return None
        return list(struct.unpack(self.fmt[0] + self.fmt[1] * count, data[:need]))

    def check(self, attrs: dict[bytes, bytes], tag_end: int) -> str | None:
        fmt = attrs.get(b"format", b"ascii").strip()
        if fmt == b"binary":  # base64 text up to the closing tag
            close = self.raw.find(b"<", tag_end)
            source, start, b64 = re.sub(rb"\s+", b"", self.raw[tag_end:close if close >= 0 else None]), 0, True
        elif fmt == b"appended":
            offset = attrs.get(b"offset", b"0").strip()
            if not offset.isdigit():
                return f"the header's offset={offset[:20].decode('ascii', 'replace')!r} is not a whole number"
            if self.appended_start < 0:
                return "an array is appended but the file has no appended data"
            source, start, b64 = self.raw, self.appended_start + int(offset), self.appended_base64
            if start > len(self.raw):
                return _too_large("bytes of offset", int(offset), len(self.raw), False)
        else:
            return None
        length = len(self.raw)
        if not self.compressed:
            head = self._ints(source, start, 1, b64)
            if head is None:
                return "a binary array's size header is cut short: the file is damaged"
            if head[0] > length:
                return _too_large("bytes in a binary array", head[0], length, False)
            return None
        head = self._ints(source, start, 3, b64)
        if head is None:
            return "a compressed array's header is cut short: the file is damaged"
        blocks, block_size, last_size = head
        if blocks and (block_size == 0 or last_size > block_size):  # VTK divides by the block size
            return (f"a compressed array's header declares blocks of {block_size} bytes with a last block of "
                    f"{last_size}: the file is damaged")
        if blocks * self.ws > length:
            return _too_large("compressed blocks", blocks, length, True)
        if max(block_size, last_size) > self.budget or blocks * block_size > self.budget:
            return _too_large("bytes in a compressed array", max(blocks * block_size, last_size), length, True)
        sizes = self._ints(source, start, 3 + blocks, b64)
        if sizes is None:
            return "a compressed array's header is cut short: the file is damaged"
        if any(n > length for n in sizes[3:]):
            return _too_large("packed bytes in one block", max(sizes[3:]), length, True)
        return None
