"""Per-route message translation: AMQP 0-10 or 0-9-1 ⇄ AMQP 1.0 plus optional CloudEvents
rendering.

Pure functions over the mapping layer (``mappings/``); the route runtime calls
them for every message. Any problem raises :class:`~mappings.errors.MappingError`
(``CloudEventError`` included), which the route turns into a dead-letter or a
reject carrying the reason.

A message's AMQP 1.0 bytes, and a message from them, are the message model's
(:meth:`AmqpMessage.encode` / :meth:`AmqpMessage.decode`, on the fast codec).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pamqp.commands import Basic

from amqp010.spec import DeliveryProperties, MessageProperties
from bridge.config import CloudEvents, Route
from mappings import amqp091
from mappings.amqp010 import from_amqp10, to_amqp10
from mappings.cloudevents import ContentMode, EventBuilder, Prefix, from_message, to_message
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, new_message


class CloudEventsRenderer:
    """Renders messages as CloudEvents the way one route's configuration says."""

    def __init__(self, config: CloudEvents) -> None:
        self.mode = ContentMode.BINARY if config.mode == "binary" else ContentMode.STRUCTURED
        self.prefix = Prefix(config.prefix)
        template = config.template()
        self.builder: EventBuilder | None = template.compiled if template is not None else None

    def render(self, message: AmqpMessage, now: datetime | None = None) -> AmqpMessage:
        """``message`` as a CloudEvent in the route's mode.

        A message that already is a CloudEvent (either mode, either prefix) is
        converted; a plain message needs the route's template (``source`` and
        ``type``), else CloudEventError.
        """
        event = from_message(message)
        if event is None:
            if self.builder is None:
                raise CloudEventError(
                    "message is not a CloudEvent and the route has no event template "
                    "(set cloudevents.source and cloudevents.type)", field="cloudevents")
            event = self.builder.build(message, now=now or datetime.now(UTC))
        return to_message(event, self.mode, prefix=self.prefix, envelope=message)


class Translator:
    """The translation one route applies, in either direction.

    The route's ``user_id`` rule applies to its target's user-id field, with the user
    the bridge logs into the target as (``Route.target_login_user``, resolved when the
    configuration was validated).
    """

    def __init__(self, route: Route) -> None:
        self.route = route
        self.cloudevents = CloudEventsRenderer(route.cloudevents) if route.cloudevents else None
        target = route.target
        self.routing_key = target.routing_key if target.routing_key is not None else target.queue
        self.user_id = route.effective_user_id
        self.login_user = route.target_login_user

    def legacy_to_amqp10(self, dp: DeliveryProperties | None, mp: MessageProperties | None,
                         body: bytes) -> AmqpMessage:
        """A received 0-10 message as the 1.0 message to send."""
        message = to_amqp10(dp, mp, body, user_id=self.user_id, login_user=self.login_user)
        if self.cloudevents is not None:
            message = self.cloudevents.render(message)
        return message

    def amqp10_to_legacy(self, message: AmqpMessage
                         ) -> tuple[DeliveryProperties, MessageProperties, bytes]:
        """A received 1.0 message as the 0-10 header structs and body to transfer."""
        if self.cloudevents is not None:
            message = self.cloudevents.render(message)
        dp, mp, body = from_amqp10(message, user_id=self.user_id, login_user=self.login_user)
        if self.routing_key is not None:
            dp.routing_key = self.routing_key
        return dp, mp, body

    def legacy091_to_amqp10(self, properties: Basic.Properties | None,
                            delivery: amqp091.Delivery091 | None, body: bytes) -> AmqpMessage:
        """A received 0-9-1 message as the 1.0 message to send (its headers, ``cloudEvents_``
        ones included, become application properties, so CloudEvents render as on 0-10)."""
        message = amqp091.to_amqp10(properties, delivery, body, user_id=self.user_id,
                                    login_user=self.login_user)
        if self.cloudevents is not None:
            message = self.cloudevents.render(message)
        return message

    def amqp10_to_legacy091(self, message: AmqpMessage, *, own_routing_key: bool = False,
                            published_exchange_only: bool = False
                            ) -> tuple[Basic.Properties, amqp091.Delivery091, bytes]:
        """A received 1.0 message as the 0-9-1 properties, delivery and body to publish;
        the delivery's routing key is the route's (``routing_key``, else the target
        queue; not with ``own_routing_key``: a façade delivers with the key the message
        was published with), else the message's own (the mapping's: its
        ``x-amqp-0-9-1.routing-key`` annotation, else its subject, else RabbitMQ's
        ``x-routing-key``), else ''. A subject the route's key replaces travels in the
        mapping's subject header, as the message's own key would. With
        ``published_exchange_only`` the delivery's exchange is only one the message was
        published to through the bridge (``x-amqp-0-9-1.exchange``), else None, never the
        1.0 broker's ``x-exchange`` (RabbitMQ 4 writes its own routing there)."""
        if self.cloudevents is not None:
            message = self.cloudevents.render(message)
        if self.routing_key is not None and not own_routing_key:
            message = _keyed(message, self.routing_key)
        subject = message.properties.subject
        published = amqp091.A_PUBLISHED_EXCHANGE in message.message_annotations
        properties, delivery, body = amqp091.from_amqp10(message, user_id=self.user_id,
                                                         login_user=self.login_user)
        key = self.routing_key if self.routing_key is not None and not own_routing_key else \
            delivery.routing_key if delivery.routing_key is not None else \
            subject if subject is not None else ""
        exchange = delivery.exchange if published or not published_exchange_only else None
        return properties, amqp091.Delivery091(exchange, key, delivery.redelivered), body


def _keyed(message: AmqpMessage, key: str) -> AmqpMessage:
    """``message`` annotated with routing key ``key`` unless its subject already implies it
    (the 0-9-1 mapping then keeps a different subject in a header: nothing is lost)."""
    annotations = message.message_annotations
    annotated = annotations.get(amqp091.A_PUBLISHED_ROUTING_KEY, _ABSENT)
    subject = message.properties.subject
    if annotated == key or (annotated is _ABSENT and subject is not None
                            and amqp091.cut_shortstr(subject) == key):
        return message
    keyed = dict(annotations)
    amqp091.annotate_routing_key(keyed, key)
    # dataclasses.replace, without its per-field machinery (once per message on a route
    # with a routing key)
    return new_message(message.header, message.delivery_annotations, keyed,
                       message.properties, message.application_properties, message.body_kind,
                       message.body, message.footer)


_ABSENT = object()
