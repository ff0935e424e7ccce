"""confluent-kafka (librdkafka) over SASL_PLAINTEXT, with PLAIN and with SCRAM-SHA-256:
create a topic, produce, read back with an assigned consumer and compare; a wrong
password must fail with an authentication error.

Usage: confluent_sasl.py SASL_BOOTSTRAP TOPIC USER PASSWORD. Exit 0 on success.
"""

import os
import sys
import time
import traceback

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gen import gen

NAME = "confluent-sasl"
RECORDS = 200
MECHANISMS = ["PLAIN", "SCRAM-SHA-256"]
errors = []
DEBUG = {"debug": "security,broker,protocol"} if os.environ.get("COMPAT_DEBUG") == "1" else {}


def security(bootstrap, mechanism, user, password):
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password, **DEBUG}


def roundtrip(bootstrap, topic, mechanism, user, password):
    conf = security(bootstrap, mechanism, user, password)
    admin = AdminClient(conf)
    for f in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                                 request_timeout=15).values():
        f.result(timeout=30)
    print("%s: created topic %s over SASL_PLAINTEXT with %s" % (NAME, topic, mechanism), flush=True)
    producer = Producer({**conf, "acks": "all", "message.timeout.ms": 20000})
    reports = []
    for i in range(RECORDS):
        key, value, headers, ts = gen(i)
        producer.produce(topic, value=value, key=key, partition=0, timestamp=ts, headers=headers,
                         on_delivery=lambda err, msg, i=i: reports.append((i, err)))
    left = producer.flush(30)
    bad = [r for r in reports if r[1] is not None]
    if left or bad:
        errors.append("%s: %d not delivered, %d failed (%s)" % (mechanism, left, len(bad), bad[:1]))
    consumer = Consumer({**conf, "group.id": topic + "-unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got, deadline = 0, time.time() + 30
    while got < RECORDS and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                errors.append("%s: consume: %s" % (mechanism, m.error()))
            continue
        key, value, _, _ = gen(got)
        if m.offset() != got or m.key() != key or m.value() != value:
            errors.append("%s: record %d differs (offset %d)" % (mechanism, got, m.offset()))
        got += 1
    consumer.close()
    if got != RECORDS:
        errors.append("%s: consumed %d of %d records" % (mechanism, got, RECORDS))
    print("%s: %s: produced and consumed %d records" % (NAME, mechanism, got), flush=True)


def wrong_password(bootstrap, mechanism, user, password):
    seen = []
    conf = {**security(bootstrap, mechanism, user, password + "-wrong"), "error_cb": lambda e: seen.append(e)}
    admin = AdminClient(conf)
    try:
        admin.list_topics(timeout=3)
        errors.append("%s: a wrong password was accepted" % mechanism)
    except Exception as e:  # the list fails; the reason comes through error_cb
        pass
    deadline = time.time() + 10
    while not any(e.code() == KafkaError._AUTHENTICATION for e in seen) and time.time() < deadline:
        admin.poll(0.2)
    auth = [e for e in seen if e.code() == KafkaError._AUTHENTICATION]
    if not auth:
        errors.append("%s: a wrong password gave %s, want _AUTHENTICATION" % (mechanism, seen))
    else:
        print("%s: %s: wrong password: %s" % (NAME, mechanism, auth[0].str()), flush=True)


def main():
    bootstrap, topic, user, password = sys.argv[1:5]
    for mechanism in MECHANISMS:
        roundtrip(bootstrap, "%s-%s" % (topic, mechanism.lower()), mechanism, user, password)
        wrong_password(bootstrap, mechanism, user, password)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        errors.append("exception")
    for e in errors:
        print("%s: FAIL %s" % (NAME, e), flush=True)
    sys.exit(1 if errors else 0)
