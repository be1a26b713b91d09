"""Tables about AMQP 0-9-1 methods: reply codes, who may send what, which carry content.

The methods themselves are pamqp's classes (:mod:`pamqp.commands`); these tables
say how the engine treats them.  A method that the sending peer's role may not
send is answered with connection.close(503 command-invalid), as RabbitMQ answers
a method it does not handle ("unimplemented method").
"""

from __future__ import annotations

from enum import Enum, IntEnum

from pamqp import commands as C
from pamqp.base import Frame


class Role(Enum):
    """Which end of the connection the engine plays."""

    CLIENT = "client"
    SERVER = "server"


class ReplyCode(IntEnum):
    """Reply codes of connection.close / channel.close (the 0-9-1 spec's constants)."""

    REPLY_SUCCESS = 200
    CONTENT_TOO_LARGE = 311
    NO_ROUTE = 312
    NO_CONSUMERS = 313
    CONNECTION_FORCED = 320
    INVALID_PATH = 402
    ACCESS_REFUSED = 403
    NOT_FOUND = 404
    RESOURCE_LOCKED = 405
    PRECONDITION_FAILED = 406
    FRAME_ERROR = 501
    SYNTAX_ERROR = 502
    COMMAND_INVALID = 503
    CHANNEL_ERROR = 504
    UNEXPECTED_FRAME = 505
    RESOURCE_ERROR = 506
    NOT_ALLOWED = 530
    NOT_IMPLEMENTED = 540
    INTERNAL_ERROR = 541


BOTH: frozenset[type[Frame]] = frozenset({
    C.Connection.Close, C.Connection.CloseOk,
    C.Channel.Flow, C.Channel.FlowOk, C.Channel.Close, C.Channel.CloseOk,
    C.Basic.Ack, C.Basic.Nack,  # client: acknowledgements; server: publisher confirms
    C.Basic.Cancel,             # server: RabbitMQ's consumer cancel notification
})

SENT_BY_SERVER: frozenset[type[Frame]] = BOTH | {
    C.Connection.Start, C.Connection.Secure, C.Connection.Tune, C.Connection.OpenOk,
    C.Connection.Blocked, C.Connection.Unblocked, C.Connection.UpdateSecretOk,
    C.Channel.OpenOk,
    C.Exchange.DeclareOk, C.Exchange.DeleteOk, C.Exchange.BindOk, C.Exchange.UnbindOk,
    C.Queue.DeclareOk, C.Queue.BindOk, C.Queue.PurgeOk, C.Queue.DeleteOk, C.Queue.UnbindOk,
    C.Basic.QosOk, C.Basic.ConsumeOk, C.Basic.CancelOk, C.Basic.Return, C.Basic.Deliver,
    C.Basic.GetOk, C.Basic.GetEmpty, C.Basic.RecoverOk,
    C.Tx.SelectOk, C.Tx.CommitOk, C.Tx.RollbackOk,
    C.Confirm.SelectOk,
}
"""Methods a server may send (a client receiving anything else answers 503)."""

SENT_BY_CLIENT: frozenset[type[Frame]] = BOTH | {
    C.Connection.StartOk, C.Connection.SecureOk, C.Connection.TuneOk, C.Connection.Open,
    C.Connection.UpdateSecret,
    C.Channel.Open,
    C.Exchange.Declare, C.Exchange.Delete, C.Exchange.Bind, C.Exchange.Unbind,
    C.Queue.Declare, C.Queue.Bind, C.Queue.Purge, C.Queue.Delete, C.Queue.Unbind,
    C.Basic.Qos, C.Basic.Consume, C.Basic.Publish, C.Basic.Get, C.Basic.Reject,
    C.Basic.RecoverAsync, C.Basic.Recover,
    C.Tx.Select, C.Tx.Commit, C.Tx.Rollback,
    C.Confirm.Select,
}
"""Methods a client may send."""

SENT_BY: dict[Role, frozenset[type[Frame]]] = {
    Role.CLIENT: SENT_BY_CLIENT,
    Role.SERVER: SENT_BY_SERVER,
}

CONTENT_METHODS: frozenset[type[Frame]] = frozenset({
    C.Basic.Publish, C.Basic.Return, C.Basic.Deliver, C.Basic.GetOk,
})
"""Methods followed by a content header and body frames."""

CONNECTION_CLASS = C.Connection.frame_id
"""Class id 10: these methods travel on channel 0 only."""

REPLY_NAMES: frozenset[str] = frozenset(
    name for cls in C.INDEX_MAPPING.values() for name in getattr(cls, "valid_responses", []))
"""Names of methods that answer a synchronous request (declare-ok, get-empty, …)."""


def expects_reply(method: Frame) -> bool:
    """Whether the peer answers ``method`` (synchronous and not sent with no-wait)."""
    return bool(method.synchronous and method.valid_responses
                and not getattr(method, "nowait", False))


def class_method(method: Frame) -> tuple[int, int]:
    """(class id, method id) of ``method``, for the class-id/method-id fields of a close."""
    return method.index >> 16, method.index & 0xFFFF


__all__ = [
    "BOTH",
    "CONNECTION_CLASS",
    "CONTENT_METHODS",
    "REPLY_NAMES",
    "SENT_BY",
    "SENT_BY_CLIENT",
    "SENT_BY_SERVER",
    "ReplyCode",
    "Role",
    "class_method",
    "expects_reply",
]
