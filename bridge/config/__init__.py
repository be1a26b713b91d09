"""The bridge's YAML configuration, validated with pydantic.

``load_config(path)`` reads YAML, substitutes ``${NAME}`` / ``${NAME:-default}``
from the environment and ``${file:/path}`` with a file's content (secrets),
validates, and cross-checks references (a route's endpoints name existing
connections/listeners of a fitting protocol) and TLS files (readable, keys
matching).  Every problem is reported as a :class:`ConfigError` whose lines
name the key path, e.g. ``routes[0].from.queue: required for an amqp0-10
connection``; a secret value never appears in one (:func:`config_secrets`).

Modules: :mod:`.models` (the keys and the checks across them), :mod:`.loading`
(YAML, substitution, problems), :mod:`.describe` (what ``check`` prints).
"""

from .describe import describe
from .loading import load_config, parse_config, substitute_env
from .models import (
    REFERENCE_PROBLEMS,
    BridgeConfig,
    ClientTls,
    CloudEvents,
    ConfigError,
    Connection,
    DeadLetter,
    Dedupe,
    Endpoint,
    Listener,
    ListenerTls,
    ListenerTopology,
    Logging,
    MaxInFlight,
    Metrics,
    Protocol,
    Reconnect,
    Route,
    SaslMechanism,
    UserIdRule,
    config_identities,
    config_secrets,
    redact_url,
)

__all__ = ['BridgeConfig', 'ClientTls', 'CloudEvents', 'ConfigError', 'Connection', 'DeadLetter', 'Dedupe', 'Endpoint', 'Listener', 'ListenerTls', 'ListenerTopology', 'Logging', 'MaxInFlight', 'Metrics', 'Protocol', 'REFERENCE_PROBLEMS', 'Reconnect', 'Route', 'SaslMechanism', 'UserIdRule', 'config_identities', 'config_secrets', 'describe', 'load_config', 'parse_config', 'redact_url', 'substitute_env']
