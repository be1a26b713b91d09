"""Tests of the AMQP 0-10 codec (amqp010): captures, golden bytes, properties, fuzz."""
