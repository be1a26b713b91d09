"""amqp091's own classes for the 0-9-1 field types plain Python has no type for.

The defaults of :class:`amqp091.tables.FieldTypes` (re-exported there). They live apart
from the table codec so that it compiles with mypyc (the accelerated build,
docs/operations.md): mypyc cannot compile subclasses of ``int``, ``float`` or ``bytes``.
"""

from __future__ import annotations


class Byte(int):
    """0-9-1 short-short-int (``b``)."""


class UByte(int):
    """0-9-1 short-short-uint (``B``)."""


class Short(int):
    """0-9-1 short-int (``s``)."""


class UShort(int):
    """0-9-1 short-uint (``u``)."""


class Int32(int):
    """0-9-1 long-int (``I``)."""


class UInt32(int):
    """0-9-1 long-uint (``i``)."""


class ULongLong(int):
    """0-9-1 long-long-uint (``L``)."""


class Float32(float):
    """0-9-1 float (``f``)."""


class LongString(bytes):
    """A 0-9-1 long string (``S``) whose octets are not UTF-8."""


__all__ = ["Byte", "Float32", "Int32", "LongString", "Short", "UByte", "UInt32", "ULongLong",
           "UShort"]
