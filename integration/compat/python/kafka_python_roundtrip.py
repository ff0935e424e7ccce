"""kafka-python round trip: admin create, gzip produce, assigned consume, delete.

Usage: kafka_python_roundtrip.py BOOTSTRAP TOPIC [API_VERSION]. Exit 0 on success.

API_VERSION (say 1.0) pins kafka-python to the request versions of that Kafka
release instead of negotiating through ApiVersions, which exercises the old
request versions that older clients still send (Produce v5, Fetch v6,
Metadata v5, ListOffsets v2 for 1.0).
"""

import logging
import os
import sys
import time
import traceback

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from gen import RECORDS, compare, gen

PARTITIONS = 3
NAME = "kafka-python"
errors = []  # every mismatch found, reported together at the end


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    pinned = {}
    if len(sys.argv) > 3:
        pinned = {"api_version": tuple(int(x) for x in sys.argv[3].split("."))}
    if os.environ.get("COMPAT_DEBUG") == "1":
        logging.basicConfig(level=logging.DEBUG)
    errors = []

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000, **pinned)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)],
                            timeout_ms=15000)
    finally:
        admin.close()
    print("%s: created topic %s" % (NAME, topic), flush=True)

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip",
                             enable_idempotence=False, linger_ms=5,
                             # Without idempotence only one request in flight keeps retries in order.
                             max_in_flight_requests_per_connection=1, request_timeout_ms=15000,
                             max_block_ms=30000, **pinned)
    print("%s: api_version %s (%s)" % (NAME, producer.config["api_version"], "pinned" if pinned else "negotiated"),
          flush=True)
    futures = []
    for i in range(RECORDS):
        key, value, headers, ts = gen(i, null_header_value=False)
        futures.append(producer.send(topic, value=value, key=key, headers=headers,
                                     partition=i % PARTITIONS, timestamp_ms=ts))
    producer.flush(timeout=30)
    producer.close(timeout=10)
    # i % PARTITIONS lands record i on partition p at offset i // PARTITIONS.
    for i, f in enumerate(futures):
        try:
            md = f.get(timeout=30)
        except Exception as e:  # noqa: BLE001 - report whatever the client raised
            errors.append("produce record %d: %r" % (i, e))
            break
        if (md.partition, md.offset) != (i % PARTITIONS, i // PARTITIONS):
            errors.append("produce record %d landed at %d/%d" % (i, md.partition, md.offset))
            break
    else:
        print("%s: produced %d records (gzip)" % (NAME, RECORDS), flush=True)

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             request_timeout_ms=15000, check_crcs=True, **pinned)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    begin = consumer.beginning_offsets(tps)
    end = consumer.end_offsets(tps)
    for tp in tps:
        want_end = len(range(tp.partition, RECORDS, PARTITIONS))
        if begin[tp] != 0:
            errors.append("ListOffsets earliest %s = %d, want 0" % (tp, begin[tp]))
        if end[tp] != want_end:
            errors.append("ListOffsets latest %s = %d, want %d" % (tp, end[tp], want_end))
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = {p: [] for p in range(PARTITIONS)}
    total = 0
    deadline = time.monotonic() + 60
    while total < RECORDS and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=500).items():
            got[tp.partition].extend(recs)
            total += len(recs)
    consumer.close()
    print("%s: consumed %d of %d records" % (NAME, total, RECORDS), flush=True)

    # Reassemble the global order: record i is partition i%P, position i//P.
    for p in range(PARTITIONS):
        want = list(range(p, RECORDS, PARTITIONS))
        if len(got[p]) != len(want):
            errors.append("partition %d: got %d records, want %d" % (p, len(got[p]), len(want)))
        for pos, (i, r) in enumerate(zip(want, got[p])):
            diff = compare(i, r.key, r.value, r.headers, r.timestamp, null_header_value=False)
            if r.offset != pos:
                diff = "record %d has offset %d, want %d" % (i, r.offset, pos)
            elif r.timestamp_type != 0:
                diff = "record %d timestamp type %d, want 0 (CreateTime)" % (i, r.timestamp_type)
            if diff:
                errors.append("partition %d offset %d: %s" % (p, r.offset, diff))
                break

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000, **pinned)
    try:
        admin.delete_topics([topic], timeout_ms=15000)
        # Deletion may take a moment to show in Metadata; bounded wait.
        for _ in range(50):
            if topic not in admin.list_topics():
                print("%s: deleted topic %s" % (NAME, topic), flush=True)
                break
            time.sleep(0.2)
        else:
            errors.append("topic %s still listed by Metadata 10 s after DeleteTopics" % topic)
    finally:
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
