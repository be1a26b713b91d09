"""Typed errors raised by the mapping layer (``mappings``)."""

from __future__ import annotations


class MappingError(ValueError):
    """A value cannot be mapped between message models.

    ``field`` names the offending field (``"properties.subject"``,
    ``"application_properties['x']"``, a CloudEvents attribute such as ``"time"``)
    or is ``None`` when the problem concerns the input as a whole; ``reason``
    says what is wrong. ``str(error)`` is ``"<field>: <reason>"``.
    """

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.reason = reason
        self.field = field

    def __reduce__(self) -> tuple[object, ...]:
        # Keep ``field`` across pickling (Spark ships exceptions between processes).
        return (_rebuild, (type(self), self.reason, self.field))


class CloudEventError(MappingError):
    """A message or event violates the CloudEvents spec or its AMQP binding.

    ``field`` is the CloudEvents attribute name (``"id"``, ``"time"``, an
    extension name), ``"data"``, or the AMQP field that made the input invalid.
    """


def _rebuild(cls: type[MappingError], reason: str, field: str | None) -> MappingError:
    return cls(reason, field=field)
