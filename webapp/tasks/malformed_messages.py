"""A message on the queue that is not a message (not JSON, not kombu's envelope, a body that is
not base64) is dropped with one line at WARNING, and the worker goes on with the next one.

kombu reads such a message as an error of the connection: on Redis and on the embedded queue
the worker stopped for good ("Unrecoverable error: JSONDecodeError"), or reconnected for
nothing. By then the message has left the queue (Redis's BRPOP took it, the embedded queue
removed its file), so dropping it loses nothing a worker could have run.

Used by the embedded queue's transport (owner_only_broker), by `RedisTransport`, set as
Celery's `broker_transport` for redis:// brokers, and by `Consumer`, Celery's consumer of
every broker (RabbitMQ's included), for a message that is an envelope but not a task Celery
can run (engine.py)."""

from __future__ import annotations

import base64
import binascii
import json
import logging
from queue import Empty

from celery import signals
from celery.worker import consumer
from kombu.transport import redis
from kombu.utils.encoding import str_to_bytes

log = logging.getLogger(__name__)

# What kombu's loads(bytes_to_str(...)) raises for bytes that are not a message.
UNREADABLE = (json.JSONDecodeError, UnicodeDecodeError)


def dropped(queue: str, why: object) -> None:
    log.warning("queue %s: a malformed message was dropped (%s)", queue, why)


def envelope_problem(raw: object) -> str | None:
    """Why `raw` (a message as read from the queue) is not kombu's envelope, or None: what
    kombu's Message and its QoS take from it without asking."""
    if not isinstance(raw, dict) or not isinstance(raw.get("properties"), dict):
        return "no properties"
    properties = raw["properties"]
    info = properties.get("delivery_info")
    if not isinstance(properties.get("delivery_tag"), str):
        return "no delivery tag"
    if not (isinstance(info, dict) and isinstance(info.get("exchange"), str)
            and isinstance(info.get("routing_key"), str)):
        return "no delivery info"
    body = raw.get("body")
    if body and properties.get("body_encoding") == "base64":
        try:
            base64.b64decode(str_to_bytes(body))  # as kombu's Channel.decode_body does
        except (binascii.Error, TypeError, ValueError) as exc:
            return f"body: {exc}"
    return None


class TransportDropsMalformed:
    """A virtual Transport (kombu.transport.virtual.Transport) whose delivery drops a message
    that is JSON but not an envelope, before a Channel makes a Message of it."""

    def _deliver(self, message, queue):
        problem = envelope_problem(message)
        if problem:
            dropped(queue, problem)
            return
        super()._deliver(message, queue)


class ChannelDropsUnreadable:
    """A virtual Channel whose `_get` (the embedded queue's only read) drops a message that is
    not JSON: the next one is read on the next poll."""

    def _get(self, queue, *args, **kwargs):
        try:
            return super()._get(queue, *args, **kwargs)
        except UNREADABLE as exc:
            dropped(queue, exc)
            raise Empty() from None


class RedisChannel(ChannelDropsUnreadable, redis.Channel):
    def _brpop_read(self, **options):
        """A worker's read (BRPOP) of a message that is not JSON: dropped. (Neither error
        comes from the delivery that follows the read: kombu's serializers raise DecodeError,
        which Celery handles.)"""
        try:
            return super()._brpop_read(**options)
        except UNREADABLE as exc:
            dropped(self._queue_cycle.items[-1], exc)  # kombu rotates the queue it read last
            raise Empty() from None


class RedisTransport(TransportDropsMalformed, redis.Transport):
    Channel = RedisChannel


class Consumer(consumer.Consumer):
    """Celery's consumer (Celery's `worker_consumer`), saying in one WARNING line, without the
    body or a traceback, what it does anyway with a message it cannot run: it drops it. Celery
    logged each at ERROR or CRITICAL with a traceback, over dozens of lines."""

    def on_decode_error(self, message, exc):
        dropped(_queue_of(message), f"its body is not {message.content_type}: {exc}")
        message.ack()

    def on_unknown_message(self, body, message):
        dropped(_queue_of(message), "not a task")
        message.reject_log_error(log, self.connection_errors)
        signals.task_rejected.send(sender=self, message=message, exc=None)

    def on_unknown_task(self, body, message, exc):
        name = exc.args[0] if exc.args else "?"
        log.warning("queue %s: a task of unknown name %s was dropped", _queue_of(message), name)
        message.reject_log_error(log, self.connection_errors)

    def on_invalid_task(self, body, message, exc):
        dropped(_queue_of(message), exc)
        message.reject_log_error(log, self.connection_errors)
        signals.task_rejected.send(sender=self, message=message, exc=exc)


def _queue_of(message) -> str:
    """The queue a message came from: its routing key, on the default exchange Celery uses."""
    return (message.delivery_info or {}).get("routing_key") or "?"
