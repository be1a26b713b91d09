"""Base classes of the generated AMQP 0-10 structs, controls and commands.

The concrete classes live in :mod:`amqp010.spec`, generated from the
spec XML by ``tools/gen_amqp010.py``; their ``encode_fields``/``decode_fields``
are generated straight-line code for speed.  This module holds what they share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from . import types as T
from .errors import DecodeError, EncodeError
from .types import u16_pack, u16_unpack, u32_pack_into


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a struct, control or command, as the spec declares it."""

    name: str
    """Spec name, e.g. ``"routing-key"``."""
    attr: str
    """Python attribute, e.g. ``"routing_key"``."""
    type: str
    """Resolved wire type, e.g. ``"str8"`` or a struct class name."""
    domain: str
    """Declared type (domain) as written in the spec, e.g. ``"exchange.name"``."""
    required: bool


class Struct:
    """An AMQP 0-10 struct: fields encoded behind packing flags."""

    __slots__ = ()
    NAME: ClassVar[str] = ""
    """Qualified spec name, e.g. ``"message.delivery-properties"``."""
    CODE: ClassVar[int | None] = None
    """Struct code with its class code in the high byte (``0x0401``), or None."""
    SIZE_WIDTH: ClassVar[int] = 0
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = ()

    # generated per class
    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        """Append packing flags and present fields (``depth``: nesting level, bounded)."""
        raise NotImplementedError

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[Any, int]:
        """Decode packing flags and fields at ``buf[pos:]``."""
        raise NotImplementedError

    # shared behaviour
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        slots: tuple[str, ...] = self.__slots__
        return all(getattr(self, s) == getattr(other, s) for s in slots)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self.items()]
        return f"{type(self).__name__}({', '.join(parts)})"

    def items(self) -> list[tuple[str, Any]]:
        """``(attr, value)`` for every field that is present (non-None, or a set bit)."""
        out = []
        for f in self.FIELDS:
            v = getattr(self, f.attr)
            if v is None or (v is False and f.type == "bit"):
                continue
            out.append((f.attr, v))
        return out

    def encode(self) -> bytes:
        """This struct as it appears in a header segment or struct32: size, code, fields."""
        out = bytearray(b"\x00\x00\x00\x00")
        if self.CODE is not None:
            out += u16_pack(self.CODE)
        self.encode_fields(out)
        u32_pack_into(out, 0, len(out) - 4)
        return bytes(out)

    def encode_sized(self, out: bytearray, depth: int = 0) -> None:
        """Append this struct as a field value: SIZE_WIDTH size prefix, code, fields."""
        width = self.SIZE_WIDTH
        start = len(out)
        out += bytes(width)
        if self.CODE is not None:
            out += u16_pack(self.CODE)
        self.encode_fields(out, depth + 1)
        size = len(out) - start - width
        if size >= 1 << (8 * width):
            raise EncodeError(f"{self.NAME}: {size} octets do not fit a {width}-octet size")
        out[start : start + width] = size.to_bytes(width, "big")

    @classmethod
    def decode_sized(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[Any, int]:
        """Decode this struct as a field value (inverse of :meth:`encode_sized`)."""
        width = cls.SIZE_WIDTH
        if depth > 32:
            raise DecodeError(pos, f"{cls.NAME} nested too deeply")
        if pos + width > len(buf):
            raise DecodeError(pos, f"truncated {cls.NAME} size")
        size = int.from_bytes(buf[pos : pos + width], "big") if width else None
        start = pos + width
        if size is not None:
            end = start + size
            if end > len(buf):
                raise DecodeError(pos, f"{cls.NAME} size {size} overruns its container")
            sub = buf[:end]
        else:
            sub = buf
        p = start
        if cls.CODE is not None:
            if p + 2 > len(sub):
                raise DecodeError(p, f"truncated {cls.NAME} code")
            code = u16_unpack(sub, p)[0]
            if code != cls.CODE:
                raise DecodeError(p, f"expected {cls.NAME} code {cls.CODE:#06x}, got {code:#06x}")
            p += 2
        value, p = cls.decode_fields(sub, p, depth + 1)
        if size is not None and p != start + size:
            raise DecodeError(p, f"{cls.NAME}: size {size} does not match its fields")
        return value, p

    def _bad_field(self, exc: BaseException) -> EncodeError:
        """Find the field that failed to encode and describe it (slow path only)."""
        for f in self.FIELDS:
            value = getattr(self, f.attr)
            if value is None or f.type == "bit":
                continue
            try:
                _encode_field(f.type, value)
            except Exception as inner:
                shown = repr(value)
                if len(shown) > 60:
                    shown = shown[:57] + "..."
                return EncodeError(f"{self.NAME}.{f.name} ({f.type}) = {shown}: {inner}")
        return EncodeError(f"{self.NAME}: {exc}")


def _encode_field(type_name: str, value: Any) -> None:
    """Encode one field value on its own, raising whatever its encoder raises."""
    out = bytearray()
    simple: dict[str, Any] = {
        "uint8": lambda v: out.append(v),
        "uint16": lambda v: out.extend(T.u16_pack(v)),
        "uint32": lambda v: out.extend(T.u32_pack(v)),
        "sequence-no": lambda v: out.extend(T.u32_pack(v)),
        "uint64": lambda v: out.extend(T.u64_pack(v)),
        "datetime": lambda v: T.ENCODERS_BY_CODE[0x38](out, v, 0),
        "uuid": lambda v: out.extend(v.bytes),
        "str8": lambda v: T.enc_str8(out, v),
        "str16": lambda v: T.enc_str16(out, v),
        "vbin8": lambda v: T.enc_vbin8(out, v),
        "vbin16": lambda v: T.enc_vbin16(out, v),
        "vbin32": lambda v: T.enc_vbin32(out, v),
        "map": lambda v: T.encode_map(out, v),
        "array": lambda v: T.encode_array(out, v),
        "struct32": lambda v: T.encode_struct32(out, v),
        "sequence-set": lambda v: T.enc_sequence_set(out, v),
        "byte-ranges": lambda v: T.enc_byte_ranges(out, v),
    }
    encode = simple.get(type_name)
    if encode is not None:
        encode(value)
    elif type(value).__name__ != type_name:  # a struct-typed field
        raise TypeError(f"expected a {type_name}, got {type(value).__name__}")
    else:
        value.encode_sized(out)


def decode_flags(buf: bytes, pos: int, width: int) -> int:
    """Packing flags: ``width`` octets, the first octet holding fields 0-7."""
    if pos + width > len(buf):
        raise DecodeError(pos, "truncated packing flags")
    return int.from_bytes(buf[pos : pos + width], "little")


def check_size(buf: bytes, pos: int, need: int) -> None:
    """Raise DecodeError unless ``need`` octets follow ``pos``."""
    if pos + need > len(buf):
        raise DecodeError(pos, f"truncated: need {need} octets, {len(buf) - pos} left")


class Control(Struct):
    """A connection- or session-level control (track 0)."""

    __slots__ = ()
    CLASS_CODE: ClassVar[int] = 0
    OP_CODE: ClassVar[int] = 0


class Command(Struct):
    """An execution-level command (track 1); ``sync`` is its session header's flag."""

    __slots__ = ()
    CLASS_CODE: ClassVar[int] = 0
    OP_CODE: ClassVar[int] = 0
    HAS_PAYLOAD: ClassVar[bool] = False
    """True if the command carries header and body segments (e.g. message.transfer)."""
    RESULT: ClassVar[type[Struct] | None] = None
    """The struct type of this command's execution.result, if it has one."""
    sync: bool
