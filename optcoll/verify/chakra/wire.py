"""Chakra execution traces decoded from the protobuf wire format, by hand.

A Chakra ET file (``et_def.proto`` of mlcommons/chakra, package ``ChakraProtoMsg``) is a
sequence of length-delimited messages: a varint byte count, then the message
(``encodeMessage`` in chakra's ``src/third_party/utils/protolib.py``; ``readMessage`` in
astra-sim/chakra ``src/feeder_v3/protobuf_util.h``). The first is a ``GlobalMetadata``
(``version = 1``, ``attr = 2``), every other a ``Node``:

=================  =====  ==========================================================
field              number  wire type
=================  =====  ==========================================================
id                 1      varint (uint64)
name               2      length-delimited (string)
type               3      varint (enum NodeType: COMP_NODE 4, COMM_SEND_NODE 5,
                          COMM_RECV_NODE 6, ...)
ctrl_deps          4      varint, or packed (length-delimited run of varints)
data_deps          5      varint, or packed
start_time_micros  6      varint
duration_micros    7      varint
attr               10     length-delimited ``AttributeProto``
=================  =====  ==========================================================

An ``AttributeProto`` has ``name = 1`` and one value of a oneof, of which this module
reads the scalars: ``double_val 3`` (fixed64), ``float_val 5`` (fixed32), ``int32_val 7``,
``int64_val 9``, ``uint32_val 11``, ``uint64_val 13`` (varints), ``sint32_val 15``,
``sint64_val 17`` (zigzag varints), ``fixed32_val 19``, ``sfixed32_val 23`` (fixed32),
``fixed64_val 21``, ``sfixed64_val 25`` (fixed64), ``bool_val 27`` (varint),
``string_val 29`` (length-delimited). Unknown fields are skipped, as protobuf does.

This module shares no code with optcoll's writer (:mod:`optcoll.export.chakra`, which uses
the protobuf library): it reads any producer's traces.

Examples
--------
>>> data = bytes([4, 0x0A, 0x02, 0x30, 0x31]) + bytes([6, 0x08, 0x07, 0x18, 0x05, 0x28, 0x03])
>>> meta, nodes = decode_trace(data, "t.0.et")
>>> meta.version, nodes[0].id, nodes[0].type, nodes[0].data_deps
('01', 7, 5, (3,))
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from typing import Any

from optcoll.exceptions import FileFormatError

__all__ = ["Metadata", "TraceNode", "decode_trace", "NODE_TYPES"]

#: ``NodeType`` numbers of ``et_def.proto`` and their names.
NODE_TYPES = {
    0: "INVALID_NODE",
    1: "METADATA_NODE",
    2: "MEM_LOAD_NODE",
    3: "MEM_STORE_NODE",
    4: "COMP_NODE",
    5: "COMM_SEND_NODE",
    6: "COMM_RECV_NODE",
    7: "COMM_COLL_NODE",
    8: "STORAGE_NODE",
    9: "BATCH_NODE",
    10: "CHECKPOINT_NODE",
}

# AttributeProto value fields: number -> (name, how the payload reads)
_VALUES = {
    3: ("double", "f64"),
    5: ("float", "f32"),
    7: ("int32", "int"),
    9: ("int64", "int"),
    11: ("uint32", "uint"),
    13: ("uint64", "uint"),
    15: ("sint32", "zigzag"),
    17: ("sint64", "zigzag"),
    19: ("fixed32", "u32"),
    21: ("fixed64", "u64"),
    23: ("sfixed32", "i32"),
    25: ("sfixed64", "i64"),
    27: ("bool", "bool"),
    29: ("string", "str"),
}
_INTEGER_KINDS = frozenset(
    ("int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64")
    + ("sfixed32", "sfixed64", "bool")
)


@dataclass(frozen=True, slots=True)
class Attribute:
    """One ``AttributeProto``: its name, value kind (``int64``, ``string``, ...) and value;
    kind ``other`` for a list or bytes value (not read)."""

    name: str
    kind: str
    value: Any

    @property
    def integer(self) -> bool:
        """Whether a C++ reader converts the value to an integer (any integer kind)."""
        return self.kind in _INTEGER_KINDS


@dataclass(frozen=True)
class Metadata:
    """A trace's ``GlobalMetadata``."""

    version: str
    attrs: tuple[Attribute, ...]

    def get(self, name: str) -> Attribute | None:
        """The first attribute called ``name``, or None."""
        return next((a for a in self.attrs if a.name == name), None)


@dataclass(frozen=True, slots=True)
class TraceNode:
    """A ``Node``: its id, name, type number, dependencies and attributes."""

    id: int
    name: str
    type: int
    data_deps: tuple[int, ...]
    ctrl_deps: tuple[int, ...]
    duration_micros: int
    attrs: tuple[Attribute, ...] = field(default=())

    def get(self, name: str) -> Attribute | None:
        """The first attribute called ``name`` (as the feeder's ``get_attr_msg``), or None."""
        return next((a for a in self.attrs if a.name == name), None)

    @property
    def type_name(self) -> str:
        return NODE_TYPES.get(self.type, f"type {self.type}")


class _Reader:
    """Reads protobuf wire values from ``data[start:end]``; errors name ``where``."""

    def __init__(self, data: bytes, start: int, end: int, where: str) -> None:
        self.data, self.pos, self.end, self.where = data, start, end, where

    def fail(self, what: str) -> FileFormatError:
        return FileFormatError(f"{self.where}: {what} at byte {self.pos}")

    def varint(self) -> int:
        pos = self.pos
        if pos < self.end and self.data[pos] < 0x80:  # one byte: most of a trace's
            self.pos = pos + 1
            return self.data[pos]
        value, shift = 0, 0
        while True:
            if self.pos >= self.end:
                raise self.fail("truncated varint")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift >= 70:
                raise self.fail("varint longer than 10 bytes")

    def fixed(self, size: int) -> bytes:
        if self.pos + size > self.end:
            raise self.fail(f"truncated {8 * size}-bit value")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def delimited(self) -> tuple[int, int]:
        """(start, end) of a length-delimited payload, which it skips."""
        size = self.varint()
        start = self.pos
        if start + size > self.end:
            raise self.fail(f"length {size} runs past the end")
        self.pos = start + size
        return start, start + size

    def fields(self) -> Any:
        """Yields ``(number, wire type, value)``: an int for varints, bytes for fixed,
        a (start, end) span for length-delimited fields."""
        while self.pos < self.end:
            key = self.varint()
            number, wire = key >> 3, key & 7
            if number == 0:
                raise self.fail("field number 0")
            if wire == 0:
                yield number, wire, self.varint()
            elif wire == 1:
                yield number, wire, self.fixed(8)
            elif wire == 2:
                yield number, wire, self.delimited()
            elif wire == 5:
                yield number, wire, self.fixed(4)
            else:
                raise self.fail(f"unsupported wire type {wire} (field {number})")

    def text(self, span: tuple[int, int]) -> str:
        try:
            return self.data[span[0] : span[1]].decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string that is not UTF-8") from None


#: The wire type of each value encoding of :data:`_VALUES` (0, a varint, if not listed).
_WIRE_OF = {"f64": 1, "u64": 1, "i64": 1, "f32": 5, "u32": 5, "i32": 5, "str": 2}


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _attribute(data: bytes, span: tuple[int, int], where: str) -> Attribute:
    reader = _Reader(data, span[0], span[1], where)
    name, kind = "", "none"
    value: int | float | str | None = None
    for number, wire, raw in reader.fields():
        if number == 1 and wire == 2:
            name = sys.intern(reader.text(raw))  # a few names, on every node
        elif number in _VALUES:
            kind, how = _VALUES[number]
            if wire != _WIRE_OF.get(how, 0):
                raise reader.fail(f"attribute value field {number} has wire type {wire}")
            if how == "int":  # int32/int64: two's complement in 64 bits
                value = _signed(raw, 64)
            elif how == "uint":
                value = raw & ((1 << (32 if kind == "uint32" else 64)) - 1)
            elif how == "zigzag":
                value = (raw >> 1) ^ -(raw & 1)
            elif how == "bool":
                value = int(bool(raw))
            elif how == "str":
                value = reader.text(raw)
            else:
                value = struct.unpack(
                    {"f64": "<d", "f32": "<f", "u32": "<I", "u64": "<Q", "i32": "<i", "i64": "<q"}[
                        how
                    ],
                    raw,
                )[0]
        elif number != 2:  # 2 is doc_string; lists and bytes are kept as "other"
            kind, value = "other", None
    return Attribute(name, kind, value)


def _varints(data: bytes, span: tuple[int, int], where: str) -> list[int]:
    reader = _Reader(data, span[0], span[1], where)
    values = []
    while reader.pos < reader.end:
        values.append(reader.varint())
    return values


def _node(data: bytes, span: tuple[int, int], where: str) -> TraceNode:
    reader = _Reader(data, span[0], span[1], where)
    ident, name, kind, duration = 0, "", 0, 0
    deps: dict[int, list[int]] = {4: [], 5: []}
    attrs = []
    for number, wire, raw in reader.fields():
        if number in (1, 3, 7) and wire != 0:
            raise reader.fail(f"field {number} must be a varint, has wire type {wire}")
        if number == 1:
            ident = raw
        elif number == 2 and wire == 2:
            name = reader.text(raw)
        elif number == 3:
            kind = _signed(raw, 64)
        elif number == 7:
            duration = raw
        elif number in deps:
            if wire == 0:
                deps[number].append(raw)
            elif wire == 2:
                deps[number] += _varints(data, raw, where)
            else:
                raise reader.fail(f"dependency field {number} has wire type {wire}")
        elif number == 10 and wire == 2:
            attrs.append(_attribute(data, raw, where))
    return TraceNode(ident, name, kind, tuple(deps[5]), tuple(deps[4]), duration, tuple(attrs))


def _metadata(data: bytes, span: tuple[int, int], where: str) -> Metadata:
    reader = _Reader(data, span[0], span[1], where)
    version, attrs = "", []
    for number, wire, raw in reader.fields():
        if number == 1 and wire == 2:
            version = reader.text(raw)
        elif number == 2 and wire == 2:
            attrs.append(_attribute(data, raw, where))
    return Metadata(version, tuple(attrs))


def decode_trace(data: bytes, where: str) -> tuple[Metadata, list[TraceNode]]:
    """The metadata and nodes of one ET file's bytes ``data`` (``where`` names it in errors).

    Raises
    ------
    FileFormatError
        Empty data, or a message that is truncated or not protobuf (naming the byte).
    """
    if not data:
        raise FileFormatError(f"{where}: empty file (no GlobalMetadata)")
    outer = _Reader(data, 0, len(data), where)
    spans = []
    while outer.pos < outer.end:
        spans.append(outer.delimited())
    meta = _metadata(data, spans[0], f"{where} (GlobalMetadata)")
    nodes = [_node(data, span, f"{where} (message {i + 1})") for i, span in enumerate(spans[1:])]
    return meta, nodes
