"""Split an encoded AMQP 1.0 message into the archive's ``head`` and ``bare`` bytes.

Walks the section boundaries only (constructor codes and size fields), so the
bridge can hand the tap the bytes it already has instead of the archive
writer re-encoding every message.
"""

from __future__ import annotations

_HEADER, _DELIVERY_ANNOTATIONS, _MESSAGE_ANNOTATIONS = 0x70, 0x71, 0x72
_PROPERTIES, _AMQP_VALUE, _FOOTER = 0x73, 0x77, 0x78
_SYMBOLIC = {
    b"amqp:header:list": 0x70,
    b"amqp:delivery-annotations:map": 0x71,
    b"amqp:message-annotations:map": 0x72,
    b"amqp:properties:list": 0x73,
    b"amqp:application-properties:map": 0x74,
    b"amqp:data:binary": 0x75,
    b"amqp:amqp-sequence:list": 0x76,
    b"amqp:amqp-value:*": 0x77,
    b"amqp:footer:map": 0x78,
}
# bytes after the constructor of fixed-width types, by the constructor's high nibble
_FIXED_WIDTH = {0x4: 0, 0x5: 1, 0x6: 2, 0x7: 4, 0x8: 8, 0x9: 16}


class SectionError(ValueError):
    """The bytes are not a sequence of AMQP 1.0 message sections."""


def split_message(encoded: bytes) -> tuple[bytes | None, bytes]:
    """``(head, bare)`` of an encoded message.

    ``head`` is the header and message-annotations sections (``None`` when the
    message has neither); ``bare`` is properties, application-properties and
    the body. Delivery annotations and the footer are left out.
    """
    data = bytes(encoded)
    head: list[bytes] = []
    bare_start = bare_end = -1
    offset = 0
    size = len(data)
    while offset < size:
        code, end = _section(data, offset)
        if code in (_HEADER, _MESSAGE_ANNOTATIONS):
            head.append(data[offset:end])
        elif _PROPERTIES <= code <= _AMQP_VALUE:
            if bare_start < 0:
                bare_start = offset
            bare_end = end
        elif code not in (_DELIVERY_ANNOTATIONS, _FOOTER):
            raise SectionError(f"unknown section descriptor {code:#x} at byte {offset}")
        offset = end
    if bare_start < 0:
        raise SectionError("the message has no bare-message section")
    if bare_start == 0 and bare_end == size:
        return None, data
    return (b"".join(head) or None), data[bare_start:bare_end]


def _section(data: bytes, offset: int) -> tuple[int, int]:
    """The section descriptor code and the end offset of the section at ``offset``."""
    if data[offset] != 0x00:
        raise SectionError(f"byte {offset} does not start a described section")
    try:
        constructor = data[offset + 1]
        if constructor == 0x53:  # smallulong
            return data[offset + 2], _skip(data, offset + 3)
        if constructor == 0x80:  # ulong
            return int.from_bytes(data[offset + 2 : offset + 10], "big"), _skip(data, offset + 10)
    except IndexError:
        raise SectionError(f"truncated section at byte {offset}") from None
    if constructor in (0xA3, 0xB3):  # symbol
        name_end = _skip(data, offset + 1)
        width = 1 if constructor == 0xA3 else 4
        code = _SYMBOLIC.get(data[offset + 2 + width : name_end], -1)
        return code, _skip(data, name_end)
    raise SectionError(f"section at byte {offset} has a descriptor of type {constructor:#x}")


def _skip(data: bytes, position: int) -> int:
    """The offset just past the AMQP value whose constructor is at ``position``."""
    try:
        constructor = data[position]
        if constructor == 0x00:  # described value: descriptor, then the value
            return _skip(data, _skip(data, position + 1))
        nibble = constructor >> 4
        if nibble >= 0xA:
            if nibble & 1:  # 0xB_, 0xD_, 0xF_: four-byte size
                if position + 5 > len(data):
                    raise IndexError
                end = position + 5 + int.from_bytes(data[position + 1 : position + 5], "big")
            else:  # 0xA_, 0xC_, 0xE_: one-byte size
                end = position + 2 + data[position + 1]
        else:
            end = position + 1 + _FIXED_WIDTH[nibble]
    except (IndexError, KeyError):
        raise SectionError(f"invalid or truncated value at byte {position}") from None
    if end > len(data):
        raise SectionError(f"value at byte {position} runs past the end ({end} > {len(data)})")
    return end
