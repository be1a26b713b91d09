"""CloudEvents over AMQP 1.0: the CloudEvents AMQP protocol binding on :class:`AmqpMessage`.

Read any CloudEvents message with :func:`from_message` (``None`` for other
messages), write with :func:`to_binary` / :func:`to_structured`, switch modes
or prefixes with :func:`convert`, and create events from plain messages with an
:class:`EventTemplate`. See docs/cloudevents.md for the rules.
"""

from mappings.cloudevents.binary import Prefix, from_binary, to_binary
from mappings.cloudevents.codec import ContentMode, convert, detect_mode, from_message, to_message
from mappings.cloudevents.content import JSON_EVENT_FORMAT, STRUCTURED_CONTENT_TYPE
from mappings.cloudevents.event import SPECVERSION, CloudEvent
from mappings.cloudevents.structured import from_json, from_structured, to_json, to_structured
from mappings.cloudevents.template import ROUTING_KEY_ANNOTATION, EventBuilder, EventTemplate
from mappings.cloudevents.typesystem import AttributeValue

__all__ = [
    "JSON_EVENT_FORMAT",
    "ROUTING_KEY_ANNOTATION",
    "SPECVERSION",
    "STRUCTURED_CONTENT_TYPE",
    "AttributeValue",
    "CloudEvent",
    "ContentMode",
    "EventBuilder",
    "EventTemplate",
    "Prefix",
    "convert",
    "detect_mode",
    "from_binary",
    "from_json",
    "from_message",
    "from_structured",
    "to_binary",
    "to_json",
    "to_message",
    "to_structured",
]
