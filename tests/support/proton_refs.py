"""proton's reference counts, read from its objects' headers (for tests of who holds
what: proton's C code frees an object twice when its last references go in the wrong
order, and only a count shows that before a crash does)."""

from __future__ import annotations

from typing import Any

from cproton_ffi import ffi


def refcount(impl: Any) -> int:
    """proton's reference count of a C object: the ``int`` just before the object, in the
    header proton's ``pni_default_new`` puts before each (``pni_head_t``: the class, then
    the count)."""
    return int(ffi.cast("int *", ffi.cast("char *", impl) - 8)[0])
