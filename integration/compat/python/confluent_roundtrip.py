"""confluent-kafka (librdkafka) round trip: one partition per codec, assigned consume.

Usage: confluent_roundtrip.py BOOTSTRAP TOPIC. Exit 0 on success.
"""

import os
import sys
import time
import traceback

from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from gen import RECORDS, compare, gen

CODECS = ["lz4", "zstd", "snappy", "gzip", "none"]
NAME = "confluent-kafka"
errors = []  # every mismatch found, reported together at the end


# COMPAT_DEBUG=1 turns on librdkafka's protocol-level debug log.
DEBUG = {"debug": "broker,protocol,topic,fetch"} if os.environ.get("COMPAT_DEBUG") == "1" else {}


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]

    admin = AdminClient({"bootstrap.servers": bootstrap, **DEBUG})
    fs = admin.create_topics([NewTopic(topic, num_partitions=len(CODECS), replication_factor=1)],
                             request_timeout=15)
    for f in fs.values():
        f.result(timeout=30)
    print("%s: created topic %s (librdkafka %s)" % (NAME, topic, __import__("confluent_kafka").libversion()[0]),
          flush=True)

    for p, codec in enumerate(CODECS):
        producer = Producer({
            "bootstrap.servers": bootstrap,
            "enable.idempotence": False,
            "acks": "all",
            "compression.type": codec,
            "linger.ms": 5,
            # Without idempotence only one request in flight keeps retried batches in order.
            "max.in.flight.requests.per.connection": 1,
            "message.timeout.ms": 20000,
            **DEBUG,
        })
        # librdkafka queues records for a partition it has no metadata for
        # yet and may interleave them with later ones: wait for the leader.
        for _ in range(50):
            md = producer.list_topics(topic, timeout=10).topics.get(topic)
            if md is not None and md.error is None and p in md.partitions and md.partitions[p].leader >= 0:
                break
            time.sleep(0.2)
        else:
            errors.append("Metadata never showed a leader for %s partition %d" % (topic, p))
        reports = []
        for i in range(RECORDS):
            key, value, headers, ts = gen(i)
            while True:
                try:
                    producer.produce(topic, value=value, key=key, partition=p, timestamp=ts, headers=headers,
                                     on_delivery=lambda err, msg, i=i: reports.append((i, err, msg.offset())))
                    break
                except BufferError:
                    producer.poll(0.1)
        left = producer.flush(30)
        if left:
            errors.append("produce %s: %d messages not delivered after 30s" % (codec, left))
        bad = [(i, err, off) for i, err, off in reports if err is not None or off != i]
        if bad:
            errors.append("produce %s to partition %d: record %d: err=%s offset=%s" % ((codec, p) + bad[0]))
        delivered = len(reports) - len([b for b in bad if b[1] is not None])
        print("%s: delivered %d of %d records with %s to partition %d" % (NAME, delivered, RECORDS, codec, p),
              flush=True)
        if delivered == 0 and p == 0:
            # Produce does not work at all: spare the other codecs their timeouts.
            errors.append("nothing delivered with %s; the other codecs were not tried" % codec)
            break

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "compat-unused",  # librdkafka wants one; no group API is used with assign()
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "check.crcs": True,
        **DEBUG,
    })
    for p in range(len(CODECS)):
        lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
        if (lo, hi) != (0, RECORDS):
            errors.append("ListOffsets partition %d: watermarks (%d, %d), want (0, %d)" % (p, lo, hi, RECORDS))
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(len(CODECS))])
    got = {p: [] for p in range(len(CODECS))}
    total = 0
    deadline = time.monotonic() + 60
    while total < RECORDS * len(CODECS) and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=500, timeout=0.5):
            if msg.error():
                errors.append("consume: %s" % msg.error())
                deadline = 0
                break
            got[msg.partition()].append(msg)
            total += 1
    consumer.close()
    print("%s: consumed %d of %d records" % (NAME, total, RECORDS * len(CODECS)), flush=True)

    for p, codec in enumerate(CODECS):
        if len(got[p]) != RECORDS:
            errors.append("consume %s partition %d: got %d records, want %d" % (codec, p, len(got[p]), RECORDS))
        for i, m in enumerate(got[p]):
            ts_type, ts = m.timestamp()
            diff = compare(i, m.key(), m.value(), m.headers(), ts)
            if m.offset() != i:
                diff = "record %d has offset %d" % (i, m.offset())
            elif ts_type != TIMESTAMP_CREATE_TIME:
                diff = "record %d timestamp type %d, want CreateTime" % (i, ts_type)
            if diff:
                errors.append("consume %s partition %d: %s" % (codec, p, diff))
                break

    fs = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)], request_timeout=15)
    try:
        fs[topic].result(timeout=30)
        errors.append("CreateTopics of existing %s succeeded, want TOPIC_ALREADY_EXISTS" % topic)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            errors.append("CreateTopics of existing %s: %s, want TOPIC_ALREADY_EXISTS" % (topic, e))
    admin.delete_topics([topic], request_timeout=15)[topic].result(timeout=30)
    # Deletion may take a moment to show in Metadata; bounded wait.
    for _ in range(50):
        if topic not in admin.list_topics(timeout=15).topics:
            print("%s: deleted topic %s" % (NAME, topic), flush=True)
            break
        time.sleep(0.2)
    else:
        errors.append("topic %s still listed by Metadata 10 s after DeleteTopics" % topic)



def run():
    try:
        main()
    except Exception as e:  # noqa: BLE001 - any client error fails the round trip
        traceback.print_exc()
        # librdkafka's fatal errors surface as the cause of whatever call was running.
        root = e.__cause__ or e
        errors.append("aborted: %s: %s" % (type(root).__name__, root))
    if errors:
        for e in errors:
            print("%s: FAIL %s" % (NAME, e), flush=True)
        return 1
    print("%s: OK" % NAME, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run())
