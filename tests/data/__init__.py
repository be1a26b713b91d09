"""Facts from outside the project that the tests check against, kept in the repository.

- ``captures/amqp-0-10/`` and ``captures/amqp-0-10-qpid-messaging/``: conversations
  recorded byte for byte between real peers (qpid-python and qpidd 1.40), neither part
  of amqp-bridge; each folder's README says how they were made and what each holds.
- ``specs/`` at the repository root: the published AMQP 0-10 spec XML (the Apache Qpid
  errata version) and its DTD, from which ``tools/gen_amqp010.py`` generates
  ``amqp010/spec.py``.

Only the real peers themselves (for the interop tests, ``tests/interop/peers.py``) live
outside the repository.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root."""
CAPTURES_010 = ROOT / "tests" / "data" / "captures" / "amqp-0-10"
"""qpid-python (low-level API) ⇄ qpidd recordings, and qpidd's own 1.0 → 0-10 translation."""
CAPTURES_QPID_MESSAGING = ROOT / "tests" / "data" / "captures" / "amqp-0-10-qpid-messaging"
"""qpid.messaging applications ⇄ qpidd recordings."""
SPEC_XML = ROOT / "specs" / "amqp-0-10-qpid-errata-stripped.xml"
"""The AMQP 0-10 spec XML the codec is generated from."""
