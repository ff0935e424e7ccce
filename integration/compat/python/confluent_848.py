"""confluent-kafka (librdkafka) with group.protocol=consumer (KIP-848): two members splitting a
topic, a member leaving (the other takes its partitions, resuming at the committed offsets), the
group's offsets through the admin client, and a regex subscription that picks up a topic created
after the member joined.

Usage: confluent_848.py BOOTSTRAP TOPIC. Exit 0 on success.
"""

import sys
import time
import traceback

from confluent_kafka import ConsumerGroupTopicPartitions, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

NAME = "confluent-848"
PARTITIONS = 4
PER_ROUND = 200
WAIT = 90  # seconds, for each step
errors = []  # every mismatch found, reported together at the end


def on_error(err):
    if err.fatal():
        errors.append("fatal client error: %s" % err)


def consumer(bootstrap, group):
    # The consumer protocol refuses the classic protocol's session and
    # heartbeat settings: none are given.
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "error_cb": on_error,
    })


def produce(bootstrap, topic, partitions, tag):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "error_cb": on_error})
    for _ in range(50):
        md = p.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions:
            break
        time.sleep(0.2)
    for part in range(partitions):
        for i in range(PER_ROUND // partitions):
            p.produce(topic, key=("%s-%d-%d" % (tag, part, i)).encode(), value=b"\x01", partition=part)
    if p.flush(30):
        raise RuntimeError("records of %s not delivered after 30s" % topic)


def poll_and_commit(c, name, seen):
    """Records what a member polled (an error if a record was seen twice) and commits it."""
    msgs = c.consume(num_messages=500, timeout=0.2)
    n = 0
    for m in msgs:
        if m.error():
            continue
        k = "%s/%s" % (m.topic(), m.key().decode())
        if k in seen and len(errors) < 20:
            errors.append("record %s consumed by %s and %s" % (k, seen[k], name))
        seen[k] = name
        n += 1
    if n:
        c.commit(asynchronous=False)
    return n


def assigned(c):
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def create(admin, *topics):
    fs = admin.create_topics([NewTopic(t, n, 1) for t, n in topics], request_timeout=15)
    for f in fs.values():
        f.result(timeout=30)


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    group = topic + "-g"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    create(admin, (topic, PARTITIONS))
    produce(bootstrap, topic, PARTITIONS, "a")
    seen = {}

    # Two members split the topic.
    m1, m2 = consumer(bootstrap, group), consumer(bootstrap, group)
    m1.subscribe([topic])
    m2.subscribe([topic])
    deadline = time.time() + WAIT
    split = False
    while time.time() < deadline:
        poll_and_commit(m1, "m1", seen)
        poll_and_commit(m2, "m2", seen)
        a1, a2 = assigned(m1), assigned(m2)
        if a1 & a2:
            errors.append("partitions assigned to both members at once: %s" % sorted(a1 & a2))
            return
        split = bool(a1) and bool(a2) and len(a1) + len(a2) == PARTITIONS
        if split and len(seen) == PER_ROUND:
            break
    if not split or len(seen) != PER_ROUND:
        errors.append("two members: assignments %s / %s, %d of %d records" %
                      (sorted(assigned(m1)), sorted(assigned(m2)), len(seen), PER_ROUND))
        return
    desc = admin.describe_consumer_groups([group], request_timeout=15)[group].result(timeout=30)
    if len(desc.members) != 2:
        errors.append("describe_consumer_groups: %d members, want 2" % len(desc.members))
    gtype = getattr(desc, "type", None)
    if gtype is not None and str(gtype).split(".")[-1] != "CONSUMER":
        errors.append("describe_consumer_groups: type %s, want CONSUMER" % gtype)

    # A member leaves; the other takes every partition and resumes at the
    # committed offsets.
    m2.close()
    produce(bootstrap, topic, PARTITIONS, "b")
    deadline = time.time() + WAIT
    while time.time() < deadline and (len(seen) < 2 * PER_ROUND or len(assigned(m1)) != PARTITIONS):
        poll_and_commit(m1, "m1", seen)
    if len(assigned(m1)) != PARTITIONS or len(seen) != 2 * PER_ROUND:
        errors.append("after a member left: assignment %s, %d of %d records" %
                      (sorted(assigned(m1)), len(seen), 2 * PER_ROUND))
        return
    ends = {p: m1.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    m1.close()

    # The group's offsets through the admin client.
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=15)
    got = {tp.partition: tp.offset for tp in res[group].result(timeout=30).topic_partitions if tp.topic == topic}
    if got != ends:
        errors.append("committed offsets %s, end offsets %s" % (got, ends))

    # A regex subscription picks up a topic created after the member
    # joined, and not a topic that does not match.
    first, later, other = topic + "-rx-1", topic + "-rx-2", topic + "-other"
    create(admin, (first, 1))
    produce(bootstrap, first, 1, "rx1")
    rx_seen = {}
    rx = consumer(bootstrap, group + "-rx")
    rx.subscribe(["^" + topic.replace(".", "\\.") + "-rx-.*"])
    deadline = time.time() + WAIT
    while time.time() < deadline and len(rx_seen) < PER_ROUND:
        poll_and_commit(rx, "rx", rx_seen)
    if len(rx_seen) != PER_ROUND:
        errors.append("regex member consumed %d of %d records of %s" % (len(rx_seen), PER_ROUND, first))
        rx.close()
        return
    create(admin, (later, 2), (other, 1))
    produce(bootstrap, later, 2, "rx2")
    produce(bootstrap, other, 1, "other")
    deadline = time.time() + WAIT
    while time.time() < deadline and len(rx_seen) < 2 * PER_ROUND:
        poll_and_commit(rx, "rx", rx_seen)
    for _ in range(5):  # a record of the topic that does not match would show up now
        poll_and_commit(rx, "rx", rx_seen)
    if len(rx_seen) != 2 * PER_ROUND:
        errors.append("regex member consumed %d of %d records after %s was created; assignment %s" %
                      (len(rx_seen), 2 * PER_ROUND, later, sorted(assigned(rx))))
    if any(k.startswith(other + "/") for k in rx_seen):
        errors.append("regex member consumed records of %s, which does not match" % other)
    rx.close()


def run():
    try:
        main()
    except Exception as e:  # noqa: BLE001 - any client error fails the run
        traceback.print_exc()
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
