"""Listener security: SASL (PLAIN, SCRAM-SHA-256/512) and TLS, configured with Kafka's
keys. `sasl` is the sans-I/O exchange, `mechanisms` the PLAIN and SCRAM servers, `jaas`
the `sasl.jaas.config` parser, `listeners` reads a node's config into what the socket
server needs, and `certs` makes the lab's certificate authority."""
