"""The CloudEvent model: a validated, immutable CloudEvents 1.0 event."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from mappings.cloudevents.typesystem import (
    INTEGER_MAX,
    INTEGER_MIN,
    AttributeValue,
    check_string,
    check_timestamp,
    check_uri,
    check_value,
)
from mappings.errors import CloudEventError

SPECVERSION = "1.0"
REQUIRED_ATTRIBUTES = ("id", "source", "specversion", "type")
OPTIONAL_ATTRIBUTES = ("datacontenttype", "dataschema", "subject", "time")
CORE_ATTRIBUTES = frozenset(REQUIRED_ATTRIBUTES + OPTIONAL_ATTRIBUTES)
RESERVED_NAMES = CORE_ATTRIBUTES | {"data", "data_base64"}
RECOMMENDED_NAME_LENGTH = 20
"""The spec RECOMMENDS attribute names of at most 20 characters; longer ones are accepted."""

_NAME = re.compile(r"[a-z0-9]+", re.ASCII)
_known_names: set[str] = set()
_new = object.__new__
_set = object.__setattr__  # the event is frozen


def check_extension_name(name: Any) -> str:
    """Check an extension attribute name: lower-case a-z / 0-9, not a reserved name."""
    if name in _known_names:
        return name  # type: ignore[no-any-return]
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CloudEventError(
            "attribute names consist of lower-case letters a-z and digits 0-9", field=str(name)
        )
    if name in RESERVED_NAMES:
        raise CloudEventError("reserved name cannot be an extension attribute", field=name)
    if len(_known_names) < 4096:
        _known_names.add(name)
    return name


@dataclass(frozen=True, slots=True, kw_only=True)
class CloudEvent:
    """A CloudEvents 1.0 event, validated on construction.

    ``extensions`` maps extension attribute names to values (``bool``, ``int``,
    ``str``, ``bytes`` or an aware ``datetime``). ``data`` is the event payload
    in its encoded form (the bytes of the AMQP data section), interpreted per
    ``datacontenttype``; ``None`` (or empty bytes) means the event has no data.
    Invalid attributes raise :class:`~mappings.errors.CloudEventError` naming the
    attribute. Use ``dataclasses.replace`` to derive a modified event.
    """

    id: str
    source: str
    type: str
    specversion: str = SPECVERSION
    datacontenttype: str | None = None
    dataschema: str | None = None
    subject: str | None = None
    time: datetime | None = None
    extensions: Mapping[str, AttributeValue] = field(default_factory=dict)
    data: bytes | None = None

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # extensions is a dict

    def __post_init__(self) -> None:
        self._check_core()
        extensions = {}
        known = _known_names
        value: Any
        for name, value in self.extensions.items():
            if name not in known:
                check_extension_name(name)
            kind = type(value)
            if kind is str:
                if not (value.isascii() and value.isprintable()):
                    value = check_value(value, name)
            elif kind is int:
                if not INTEGER_MIN <= value <= INTEGER_MAX:
                    value = check_value(value, name)
            elif kind is not bool:
                value = check_value(value, name)
            extensions[name] = value
        object.__setattr__(self, "extensions", extensions)
        self._check_data()

    @classmethod
    def _from_checked_extensions(
        cls,
        id: str,
        source: str,
        type: str,
        datacontenttype: str | None,
        dataschema: str | None,
        subject: str | None,
        time: datetime | None,
        extensions: dict[str, AttributeValue],
        data: bytes | None,
    ) -> CloudEvent:
        """The event ``CloudEvent(...)`` gives, for a caller that built ``extensions``
        itself, as a new dict it hands over, of values ``CloudEvent`` keeps unchanged
        (the template builder): this skips the keyword ``__init__`` and the value
        checks and copy. Every other check runs as in ``__post_init__``.
        """
        self = _new(cls)
        _set(self, "id", id)
        _set(self, "source", source)
        _set(self, "type", type)
        _set(self, "specversion", SPECVERSION)
        _set(self, "datacontenttype", datacontenttype)
        _set(self, "dataschema", dataschema)
        _set(self, "subject", subject)
        _set(self, "time", time)
        _set(self, "extensions", extensions)
        _set(self, "data", data)
        self._check_core()
        for name in extensions:
            if name not in _known_names:
                check_extension_name(name)
        self._check_data()
        return self

    def _check_core(self) -> None:
        # Fast paths accept the common case (plain printable ASCII strings, UTC
        # times); everything else takes the full checks. Unrolled on purpose.
        value: Any = self.specversion
        if value is not SPECVERSION and (value != SPECVERSION or type(value) is not str):
            _fix_specversion(self)
        value = self.id
        if type(value) is not str or not value or not (value.isascii() and value.isprintable()):
            _fix_string(self, "id", value, required=True)
        value = self.source
        if type(value) is not str or not value or not (value.isascii() and value.isprintable()):
            _fix_string(self, "source", value, required=True)
        value = self.type
        if type(value) is not str or not value or not (value.isascii() and value.isprintable()):
            _fix_string(self, "type", value, required=True)
        value = self.datacontenttype
        if value is not None and (
            type(value) is not str or not value or not (value.isascii() and value.isprintable())
        ):
            _fix_string(self, "datacontenttype", value, required=False)
        value = self.dataschema
        if value is not None and (
            type(value) is not str or not value or not (value.isascii() and value.isprintable())
        ):
            _fix_string(self, "dataschema", value, required=False)
        value = self.subject
        if value is not None and (
            type(value) is not str or not value or not (value.isascii() and value.isprintable())
        ):
            _fix_string(self, "subject", value, required=False)
        if self.dataschema is not None:
            check_uri(self.dataschema, "dataschema")
        time = self.time
        if time is not None and (type(time) is not datetime or time.tzinfo is not UTC):
            check_timestamp(time, "time")

    def _check_data(self) -> None:
        data = self.data
        if data is not None and (type(data) is not bytes or not data):
            _fix_data(self, data)

    @classmethod
    def from_attributes(
        cls, attributes: Mapping[str, Any], data: bytes | None = None
    ) -> CloudEvent:
        """An event from one flat attribute mapping (core and extension attributes together)."""
        core: dict[str, Any] = {}
        extensions: dict[str, Any] = {}
        for name, value in attributes.items():
            if name in CORE_ATTRIBUTES:
                core[name] = value
            else:
                extensions[name] = value
        for name in REQUIRED_ATTRIBUTES:
            if name not in core:
                raise CloudEventError("required attribute is missing", field=name)
        return cls(**core, extensions=extensions, data=data)

    def attributes(self) -> dict[str, AttributeValue]:
        """Every attribute that is set (core and extensions) as one flat dict."""
        attributes: dict[str, AttributeValue] = {
            "specversion": self.specversion,
            "id": self.id,
            "source": self.source,
            "type": self.type,
        }
        for name in OPTIONAL_ATTRIBUTES:
            value = getattr(self, name)
            if value is not None:
                attributes[name] = value
        attributes.update(self.extensions)
        return attributes


def _fix_specversion(event: CloudEvent) -> None:
    if event.specversion != SPECVERSION:
        raise CloudEventError(
            f"only CloudEvents {SPECVERSION} is supported, got {event.specversion!r}",
            field="specversion",
        )
    object.__setattr__(event, "specversion", SPECVERSION)


def _fix_string(event: CloudEvent, name: str, value: Any, *, required: bool) -> None:
    if not value:
        reason = "must be a non-empty String" if required else "must not be empty when present"
        raise CloudEventError(reason, field=name)
    object.__setattr__(event, name, check_string(value, name))


def _fix_data(event: CloudEvent, data: Any) -> None:
    if data is None or isinstance(data, bytes | bytearray | memoryview):
        object.__setattr__(event, "data", bytes(data) if data else None)
        return
    raise CloudEventError(
        f"data is the encoded payload (bytes), not {type(data).__name__}", field="data"
    )
