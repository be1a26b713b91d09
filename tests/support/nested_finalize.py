"""proton alone, no shortcut: a link freed with its session while the session was ended
under it (the peer's end, no detach: proton keeps the link's handle numbers, so it stays
"bound"), whose last reference goes *after* its session's last one.

``python -m tests.support.nested_finalize link-last|session-last``, under valgrind
(``PYTHONMALLOC=malloc valgrind -q .venv/bin/python -m ...``): with ``link-last`` the
link's finalizer keeps it (``pni_preserve_child``) and drops its reference to the session,
whose finalizer (``pni_free_children``) frees the link; back in the outer ``pn_decref`` the
link's reference count is read from freed memory and, when it reads 0, the link is freed
again. ``session-last`` — the order proton's Event releases its wrappers in — is clean.
glibc does not always notice, so this is a diagnosis aid, not a test; it is why
:class:`bridge.runtime.shortcuts.HeldEvent` holds the session (and connection and
transport) while a link's event is handled.
"""

from __future__ import annotations

import faulthandler
import os
import sys

from tests.support.memory_pair import MemoryPair, sessions


def main(order: str) -> None:
    faulthandler.enable()
    pair = MemoryPair()
    pair.ours.open()
    pair.theirs.open()
    link = pair.open_sender("x", "q")
    session = link.session
    pair.pump()
    pair.answer_all()
    while pair.collector.peek():
        pair.collector.pop()
    (theirs,) = list(sessions(pair.theirs))
    theirs.close()  # the peer ends the session; its link is never detached
    pair.pump()
    link.close()
    session.close()
    pair.pump()
    session.free()
    while pair.collector.peek():  # (the final events: link_final, session_final)
        pair.collector.pop()
    if order == "link-last":
        del session
        del link
    else:
        del link
        del session
    print("done", order, flush=True)
    os._exit(0)  # (the interpreter's own teardown order is not the point)


if __name__ == "__main__":
    main(sys.argv[1])
