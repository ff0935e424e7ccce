"""kafka-python, next slice: idempotent producer, consumer group with commits.

Usage: kafka_python_next.py BOOTSTRAP TOPIC. Exit 0 on success.
"""

import sys
import time
import traceback

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from gen import RECORDS, check_round_robin, gen

PARTITIONS = 3
NAME = "kafka-python-next"
errors = []  # every mismatch found, reported together at the end


def produce(bootstrap, topic, idempotent):
    # Without idempotence only one request in flight keeps retries in order.
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=idempotent,
                             max_in_flight_requests_per_connection=5 if idempotent else 1,
                             compression_type="gzip", linger_ms=5, request_timeout_ms=15000, max_block_ms=30000)
    futures = []
    try:
        for i in range(RECORDS):
            key, value, headers, ts = gen(i, null_header_value=False)
            futures.append(producer.send(topic, value=value, key=key, headers=headers, partition=i % PARTITIONS,
                                         timestamp_ms=ts))
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)
    for i, f in enumerate(futures):
        md = f.get(timeout=30)
        if (md.partition, md.offset) != (i % PARTITIONS, i // PARTITIONS):
            errors.append("produce record %d landed at %d/%d" % (i, md.partition, md.offset))
            break


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    group = topic + "-group"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)], timeout_ms=15000)
    print("%s: created topic %s" % (NAME, topic), flush=True)

    try:
        produce(bootstrap, topic, idempotent=True)
        print("%s: produced %d records idempotently" % (NAME, RECORDS), flush=True)
    except Exception as e:  # noqa: BLE001 - recorded, then the group checks still run
        errors.append("idempotent produce: %s: %s" % (type(e).__name__, e))
        # A fresh topic: the failed attempt may have left records behind.
        topic += "-plain"
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)], timeout_ms=15000)
        produce(bootstrap, topic, idempotent=False)
        print("%s: produced %d records without idempotence (fallback)" % (NAME, RECORDS), flush=True)

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, request_timeout_ms=15000)
    got = {}
    total = 0
    deadline = time.monotonic() + 30
    while total < RECORDS and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=500).items():
            got.setdefault(tp.partition, []).extend(
                (r.offset, r.key, r.value, r.headers, r.timestamp) for r in recs)
            total += len(recs)
    consumer.commit()
    consumer.close()
    print("%s: group member consumed %d records and committed" % (NAME, total), flush=True)
    errors.extend("group consume " + e for e in check_round_robin(got, PARTITIONS, null_header_value=False))

    second = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                           request_timeout_ms=15000)
    for p in range(PARTITIONS):
        want = len(range(p, RECORDS, PARTITIONS))
        committed = second.committed(TopicPartition(topic, p))
        if committed != want:
            errors.append("OffsetFetch partition %d = %r, want %d" % (p, committed, want))
    second.subscribe([topic])
    extra = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        extra += sum(len(r) for r in second.poll(timeout_ms=500).values())
    second.close()
    if extra:
        errors.append("second group member re-read %d records past the committed offsets" % extra)

    admin.delete_topics([topic], timeout_ms=15000)
    admin.close()


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
