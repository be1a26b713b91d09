"""Security at the edges of the loop: TLS, passwords, logins.

- :mod:`.tls`: TLS contexts (proton ``SSLDomain`` for AMQP 1.0; ``ssl`` contexts for the
  hosted 0-10 sockets, which run TLS over memory buffers) and *permanent faults*: a
  refused certificate or login ends the process with one clear line, not a retry storm.
- :mod:`.passwords`: the façade's PBKDF2 password hashes and users files.
- :mod:`.logins`: the password checks waiting for a worker thread, in a bounded queue
  fair across client addresses (the one piece of work that leaves the loop).
- :mod:`.permissions`: who may do what on a façade listener, RabbitMQ's configure /
  write / read model as pure data.
"""
