"""kafka-python, next slice: idempotent producer, consumer group with commits, transactions
(committed, aborted, offsets sent to a transaction) read with read_committed and
read_uncommitted.

Usage: kafka_python_next.py BOOTSTRAP TOPIC. Exit 0 on success.
"""

import sys
import time
import traceback

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
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


def read_all(bootstrap, topic, isolation, want):
    """Read every partition of topic from the start at the given isolation level until want
    records arrived and 2 s more passed; return the values in (partition, offset) order."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                      request_timeout_ms=15000)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    got = []
    deadline = time.monotonic() + 30
    quiet_until = None
    while time.monotonic() < deadline:
        if len(got) >= want:
            quiet_until = quiet_until or time.monotonic() + 2
            if time.monotonic() > quiet_until:
                break
        for tp, recs in c.poll(timeout_ms=300).items():
            got.extend((tp.partition, r.offset, r.value) for r in recs)
    c.close()
    return [v for _, _, v in sorted(got)]


def transactions(bootstrap, topic):
    """A committed and an aborted transaction over every partition, offsets sent to a
    committed and to an aborted transaction; read_committed sees the committed records only,
    read_uncommitted all, the group the committed offset."""
    group = topic + "-txgroup"
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=topic + "-txid",
                             transaction_timeout_ms=30000, request_timeout_ms=15000, max_block_ms=30000)
    producer.init_transactions()

    def txn(prefix, commit, offset=None):
        producer.begin_transaction()
        for i in range(9):
            producer.send(topic, value=b"%s-%d" % (prefix, i), partition=i % PARTITIONS)
        if offset is not None:
            producer.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)},
                                                 group)
        if commit:
            producer.commit_transaction()
        else:
            producer.flush()
            producer.abort_transaction()

    txn(b"committed", True)
    txn(b"aborted", False, offset=5)
    txn(b"offsets", True, offset=7)
    txn(b"aborted-again", False, offset=9)
    producer.close(timeout=10)
    print("%s: 4 transactions ended" % NAME, flush=True)

    def values(prefixes):
        out = []
        for p in range(PARTITIONS):
            for prefix in prefixes:
                out.extend(b"%s-%d" % (prefix, i) for i in range(p, 9, PARTITIONS))
        return out

    want_committed = values([b"committed", b"offsets"])
    want_all = values([b"committed", b"aborted", b"offsets", b"aborted-again"])
    got = read_all(bootstrap, topic, "read_committed", len(want_committed))
    if got != want_committed:
        errors.append("read_committed saw %r, want %r" % (got, want_committed))
    got = read_all(bootstrap, topic, "read_uncommitted", len(want_all))
    if got != want_all:
        errors.append("read_uncommitted saw %r, want %r" % (got, want_all))

    # Each transaction wrote 3 records and a marker to each partition.
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, isolation_level="read_committed",
                      enable_auto_commit=False, request_timeout_ms=15000)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    ends = c.end_offsets(tps)
    for tp in tps:
        if ends[tp] != 16:
            errors.append("read_committed end offset (LSO) of partition %d = %d, want 16" % (tp.partition, ends[tp]))
    committed = c.committed(TopicPartition(topic, 0))
    if committed != 7:
        errors.append("offset committed in the transaction = %r, want 7" % committed)
    c.close()
    print("%s: read_committed, read_uncommitted and transactional offsets checked" % NAME, flush=True)


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

    tx_topic = sys.argv[2] + "-tx"
    admin.create_topics([NewTopic(tx_topic, num_partitions=PARTITIONS, replication_factor=1)], timeout_ms=15000)
    try:
        transactions(bootstrap, tx_topic)
    except Exception as e:  # noqa: BLE001 - recorded with the rest
        traceback.print_exc()
        errors.append("transactions: %s: %s" % (type(e).__name__, e))

    admin.delete_topics([topic, tx_topic], timeout_ms=15000)
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
