"""The NATS edge: the server, the wire codec, admission and rate limits, reply batches."""
