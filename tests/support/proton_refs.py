"""proton's reference counts, read from its objects' headers (for tests of who holds
what: proton's C code frees an object twice when its last references go in the wrong
order, and only a count shows that before a crash does)."""

from __future__ import annotations

import gc
from typing import Any

from cproton import pn_delivery_link, pn_link_session
from cproton_ffi import ffi
from proton import Delivery, Link

from bridge.runtime.reactor import LightDelivery


def refcount(impl: Any) -> int:
    """proton's reference count of a C object: the ``int`` just before the object, in the
    header proton's ``pni_default_new`` puts before each (``pni_head_t``: the class, then
    the count)."""
    return int(ffi.cast("int *", ffi.cast("char *", impl) - 8)[0])


def held_on(sessions: set[Any]) -> list[Any]:
    """The Python wrappers alive now (found by the garbage collector, after a collection)
    of links on ``sessions`` (proton's C sessions) or of deliveries on those links — what
    would let a link's last reference go after its session's (docs/architecture.md, the
    reference rule). A :class:`~bridge.runtime.reactor.LightDelivery` is not counted: it
    holds its session itself, and lets it go after the delivery."""
    gc.collect()
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, Link):
            impl = obj._impl
        elif isinstance(obj, Delivery) and not isinstance(obj, LightDelivery):
            impl = pn_delivery_link(obj._impl)
            if impl == ffi.NULL:
                continue
        else:
            continue
        if pn_link_session(impl) in sessions:
            found.append(obj)
    return found
