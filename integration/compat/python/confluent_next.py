"""confluent-kafka (librdkafka), next slice: idempotent producer, consumer group with commits,
transactions (committed, aborted, offsets sent to a transaction) read with read_committed and
read_uncommitted.

Usage: confluent_next.py BOOTSTRAP TOPIC. Exit 0 on success.
"""

import sys
import time
import traceback

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gen import RECORDS, check_round_robin, gen

PARTITIONS = 3
NAME = "confluent-kafka-next"
errors = []  # every mismatch found, reported together at the end


def on_error(err):
    """librdkafka's error callback: a fatal error fails the run."""
    if err.fatal():
        errors.append("fatal client error: %s" % err)


def consumer_conf(bootstrap, group):
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10000,
        "error_cb": on_error,
    }


def produce(bootstrap, topic, idempotent):
    """Produce gen(0..RECORDS) round robin; raise on any failure."""
    fatal = []
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": idempotent, "acks": "all",
            "compression.type": "zstd", "linger.ms": 5, "message.timeout.ms": 20000,
            "error_cb": lambda err: fatal.append(err) if err.fatal() else None}
    if not idempotent:
        # Without idempotence only one request in flight keeps retries in order.
        conf["max.in.flight.requests.per.connection"] = 1
    producer = Producer(conf)
    # librdkafka queues records for a partition it has no metadata for yet:
    # wait for the leaders first.
    for _ in range(50):
        md = producer.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == PARTITIONS:
            break
        time.sleep(0.2)
    reports = []

    def on_delivery(err, msg, i):
        reports.append((i, err, -1 if err else msg.partition(), -1 if err else msg.offset()))

    for i in range(RECORDS):
        key, value, headers, ts = gen(i)
        while not fatal:
            try:
                producer.produce(topic, value=value, key=key, partition=i % PARTITIONS, timestamp=ts,
                                 headers=headers, on_delivery=lambda err, msg, i=i: on_delivery(err, msg, i))
                break
            except BufferError:
                producer.poll(0.1)
            except KafkaException:
                producer.poll(0)  # runs error_cb, which records the fatal error
                if not fatal:
                    raise
    left = producer.flush(30)
    if fatal:
        raise RuntimeError("fatal client error: %s" % fatal[0])
    if left:
        raise RuntimeError("%d messages not delivered after 30s" % left)
    for i, err, p, off in sorted(reports):
        if err is not None or (p, off) != (i % PARTITIONS, i // PARTITIONS):
            raise RuntimeError("record %d: err=%s at %d/%d" % (i, err, p, off))


def read_all(bootstrap, topic, isolation, want):
    """Read every partition of topic from the start with an assigned consumer at the given
    isolation level until want records arrived and 2 s more passed; return the values in
    (partition, offset) order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-reader-" + isolation,
                  "isolation.level": isolation, "enable.auto.commit": False, "error_cb": on_error})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = []
    deadline = time.monotonic() + 30
    quiet_until = None
    while time.monotonic() < deadline:
        if len(got) >= want:
            quiet_until = quiet_until or time.monotonic() + 2
            if time.monotonic() > quiet_until:
                break
        for m in c.consume(num_messages=500, timeout=0.3):
            if m.error():
                errors.append("%s consume: %s" % (isolation, m.error()))
                continue
            got.append((m.partition(), m.offset(), m.value()))
    c.close()
    return [v for _, _, v in sorted(got)]


def transactions(bootstrap, topic):
    """Transactions as applications use them: a committed and an aborted transaction over
    every partition, offsets sent to a committed and to an aborted transaction; read_committed
    sees the committed records only, read_uncommitted all, the group the committed offset."""
    group = topic + "-txgroup"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic + "-txid",
                         "transaction.timeout.ms": 30000, "error_cb": on_error})
    producer.init_transactions(30)
    # A consumer of the group the offsets are committed for; it never joins, so its group
    # metadata has no member id and generation -1, which the broker accepts for an empty group.
    meta_consumer = Consumer(consumer_conf(bootstrap, group))
    meta = meta_consumer.consumer_group_metadata()

    def txn(prefix, commit, offset=None):
        producer.begin_transaction()
        for i in range(9):
            producer.produce(topic, value=b"%s-%d" % (prefix, i), partition=i % PARTITIONS)
        if offset is not None:
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], meta, 30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            producer.abort_transaction(30)

    txn(b"committed", True)
    txn(b"aborted", False, offset=5)
    txn(b"offsets", True, offset=7)
    txn(b"aborted-again", False, offset=9)
    meta_consumer.close()
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
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed"})
    for p in range(PARTITIONS):
        low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        if (low, high) != (0, 16):
            errors.append("watermarks of partition %d (read_committed: LSO) = %d..%d, want 0..16" % (p, low, high))
    committed = c.committed([TopicPartition(topic, 0)], timeout=30)[0]
    if committed.error or committed.offset != 7:
        errors.append("offset committed in the transaction = %d (%s), want 7" % (committed.offset, committed.error))
    c.close()
    print("%s: read_committed, read_uncommitted and transactional offsets checked" % NAME, flush=True)


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    group = topic + "-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)],
                        request_timeout=15)[topic].result(timeout=30)
    print("%s: created topic %s" % (NAME, topic), flush=True)

    try:
        produce(bootstrap, topic, idempotent=True)
        print("%s: delivered %d records idempotently" % (NAME, RECORDS), flush=True)
    except Exception as e:  # noqa: BLE001 - recorded, then the group checks still run
        root = e.__cause__ or e
        errors.append("idempotent produce: %s: %s" % (type(root).__name__, root))
        # A fresh topic: the failed attempt may have left records behind.
        topic += "-plain"
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)],
                            request_timeout=15)[topic].result(timeout=30)
        produce(bootstrap, topic, idempotent=False)
        print("%s: delivered %d records without idempotence (fallback)" % (NAME, RECORDS), flush=True)

    consumer = Consumer(consumer_conf(bootstrap, group))
    consumer.subscribe([topic])
    got = {}
    total = 0
    deadline = time.monotonic() + 30
    while total < RECORDS and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=500, timeout=0.5):
            if m.error():
                errors.append("group consume: %s" % m.error())
                deadline = 0
                break
            got.setdefault(m.partition(), []).append((m.offset(), m.key(), m.value(), m.headers(),
                                                      m.timestamp()[1]))
            total += 1
    print("%s: group member consumed %d records" % (NAME, total), flush=True)
    errors.extend("group consume " + e for e in check_round_robin(got, PARTITIONS))
    if not total:
        consumer.close()
        errors.append("the group member got no records in 30 s (FindCoordinator/JoinGroup/SyncGroup?)")
        return
    consumer.commit(asynchronous=False)
    consumer.close()

    second = Consumer(consumer_conf(bootstrap, group))
    committed = second.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    for tp in committed:
        want = len(range(tp.partition, RECORDS, PARTITIONS))
        if tp.error or tp.offset != want:
            errors.append("OffsetFetch partition %d = %d (%s), want %d" % (tp.partition, tp.offset, tp.error, want))
    second.subscribe([topic])
    extra = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        extra += len([m for m in second.consume(num_messages=500, timeout=0.5) if not m.error()])
    second.close()
    if extra:
        errors.append("second group member re-read %d records past the committed offsets" % extra)

    tx_topic = sys.argv[2] + "-tx"
    admin.create_topics([NewTopic(tx_topic, num_partitions=PARTITIONS, replication_factor=1)],
                        request_timeout=15)[tx_topic].result(timeout=30)
    try:
        transactions(bootstrap, tx_topic)
    except Exception as e:  # noqa: BLE001 - recorded with the rest
        traceback.print_exc()
        root = e.__cause__ or e
        errors.append("transactions: %s: %s" % (type(root).__name__, root))

    for t in (topic, tx_topic):
        admin.delete_topics([t], request_timeout=15)[t].result(timeout=30)


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
