"""The 0-9-1 façade's message translation: AMQP 0-9-1 ⇄ AMQP 1.0 with a route's rules.

Stand-in until the routes' :class:`~bridge.routes.translate.Translator` has its 0-9-1
methods (being added for the 0-9-1 client routes): the same steps — the lossless
mapping of :mod:`mappings.amqp091` with the route's ``user_id`` rule, then the
route's CloudEvents rendering — taken from the route's ``Translator`` (its
``cloudevents`` renderer, ``user_id`` rule and ``login_user``).  Every problem
raises :class:`~mappings.errors.MappingError`.
"""

from __future__ import annotations

from pamqp.commands import Basic
from proton import byte, float32, int32, short, ubyte, uint, ulong, ushort

from amqp091.tables import FieldTypes
from mappings import amqp091
from mappings.amqp091 import Delivery091
from mappings.amqp091_values import LongString
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind

from ..config import Route
from ..routes.translate import Translator

FIELD_TYPES = FieldTypes(byte=byte, ubyte=ubyte, short=short, ushort=ushort, int32=int32,
                         uint=uint, ulong=ulong, float32=float32, long_string=LongString)
"""The classes the engine decodes message-header values into (and encodes from): the
mapping's value types, so that every 0-9-1 field type crosses to 1.0 and back."""


def publish_to_amqp10(translator: Translator, properties: Basic.Properties,
                      delivery: Delivery091, body: bytes) -> AmqpMessage:
    """A 0-9-1 publish as the 1.0 message to send."""
    message = amqp091.to_amqp10(properties, delivery, body, user_id=translator.user_id,
                                login_user=translator.login_user)
    if translator.cloudevents is not None:
        message = translator.cloudevents.render(message)
    return message


def amqp10_to_delivery(translator: Translator, message: AmqpMessage
                       ) -> tuple[Basic.Properties, Delivery091, bytes]:
    """A received 1.0 message as the 0-9-1 properties, delivery info and body to deliver."""
    if translator.cloudevents is not None:
        message = translator.cloudevents.render(message)
    return amqp091.from_amqp10(message, user_id=translator.user_id,
                               login_user=translator.login_user)


def plain_copy(route: Route, properties: Basic.Properties, delivery: Delivery091,
               body: bytes) -> AmqpMessage:
    """A publish as plain 1.0 (no CloudEvents) for dead-lettering; one the mapping
    refuses keeps at least its body (as data)."""
    try:
        return amqp091.to_amqp10(properties, delivery, body, user_id=route.user_id,
                                 login_user=route.dead_letter_login_user)
    except MappingError:
        plain = AmqpMessage(body=[body])
        plain.body_kind = BodyKind.DATA
        return plain


__all__ = ["FIELD_TYPES", "amqp10_to_delivery", "plain_copy", "publish_to_amqp10"]
