"""confluent-kafka (librdkafka) AdminClient: create, describe, alter and delete.

Drives the admin APIs librdkafka has (CreateTopics, DescribeConfigs,
IncrementalAlterConfigs, the legacy AlterConfigs Kafka 4's Java client
dropped, CreatePartitions, DescribeCluster, DescribeTopicPartitions or
Metadata, ElectLeaders, ListOffsets, DeleteTopics) and checks what Apache
Kafka answers (COMPAT_AGAINST=kafka runs the same script against Kafka).

Usage: confluent_admin.py BOOTSTRAP TOPIC. Exit 0 on success.
"""

import os
import sys
import time
import traceback

from confluent_kafka import ElectionType, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic, OffsetSpec, ResourceType)

NAME = "confluent-admin"
TIMEOUT = 30
errors = []  # every mismatch found, reported together at the end

DEBUG = {"debug": "admin,broker,protocol"} if os.environ.get("COMPAT_DEBUG") == "1" else {}

TOPIC = ConfigSource.DYNAMIC_TOPIC_CONFIG
DEFAULT = ConfigSource.DEFAULT_CONFIG
DYN_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG


def want(ok, what):
    if not ok:
        errors.append(what)


def step(name, fn):
    """Runs one step; an exception fails that step only."""
    try:
        fn()
        print("%s: %s done" % (NAME, name), flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        traceback.print_exc()
        errors.append("%s: aborted: %r" % (name, e))


def error_code(e):
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return e.args[0].code()
    if isinstance(e, KafkaError):
        return e.code()
    return None


def want_error(what, fn, code):
    """Fails unless fn() raises a KafkaException with this error code."""
    try:
        fn()
    except KafkaException as e:
        if error_code(e) == code:
            print("%s: %s: %s" % (NAME, what, e.args[0].str()), flush=True)
        else:
            errors.append("%s: got %r, want %s" % (what, e, KafkaError(code).name()))
        return
    except Exception as e:  # noqa: BLE001
        errors.append("%s: got %r, want %s" % (what, e, KafkaError(code).name()))
        return
    errors.append("%s: succeeded, want %s" % (what, KafkaError(code).name()))


def one(fs):
    """The result of the only future in a dict of futures."""
    (f,) = fs.values()
    return f.result(timeout=TIMEOUT)


def src(s):
    """A ConfigSource's name (synonyms carry a bare int)."""
    return ConfigSource(s).name


def show(e):
    if e is None:
        return "missing"
    syn = ["%s:%s=%s" % (src(s.source), s.name, s.value) for s in e.synonyms.values()]
    return "%s=%s source=%s readOnly=%s sensitive=%s synonyms=%s" % (
        e.name, e.value, src(e.source), e.is_read_only, e.is_sensitive, syn)


def want_entry(what, e, value, source, *synonyms):
    if e is None:
        errors.append("%s: entry missing" % what)
        return
    syn = ["%s:%s=%s" % (src(s.source), s.name, s.value) for s in e.synonyms.values()]
    if e.value != value or src(e.source) != source.name or syn != list(synonyms):
        errors.append("%s: got %s; want %s=%s source=%s synonyms=%s" % (
            what, show(e), e.name, value, source.name, list(synonyms)))


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    admin = AdminClient({"bootstrap.servers": bootstrap, **DEBUG})
    res = ConfigResource(ResourceType.TOPIC, topic)
    port = int(bootstrap.rsplit(":", 1)[1])
    state = {}

    def describe(r):
        return one(admin.describe_configs([r], request_timeout=15))

    def await_entry(r, name, ok):
        """Kafka applies config changes to its metadata image asynchronously: wait up to 10 s."""
        e = None
        for _ in range(50):
            e = describe(r).get(name)
            if e is not None and ok(e):
                return e
            time.sleep(0.2)
        return e

    def incremental(r, *ops, validate_only=False):
        cr = ConfigResource(r.restype, r.name, incremental_configs=[
            ConfigEntry(n, v, incremental_operation=o) for n, v, o in ops])
        return one(admin.incremental_alter_configs([cr], validate_only=validate_only, request_timeout=15))

    def partitions_of(t):
        d = one(admin.describe_topics(TopicCollection([t]), request_timeout=15))
        return d

    def cluster():
        c = admin.describe_cluster(request_timeout=15).result(timeout=TIMEOUT)
        want(len(c.nodes) == 1, "describe_cluster: nodes %r, want one" % c.nodes)
        node = c.nodes[0]
        state["node"] = node.id
        want(c.controller is not None and c.controller.id == node.id,
             "describe_cluster: controller %r, want node %d" % (c.controller, node.id))
        want(bool(c.cluster_id), "describe_cluster: cluster id %r" % c.cluster_id)
        want(node.host == "127.0.0.1" and node.port == port, "describe_cluster: node %r" % node)
        print("%s: cluster %s, node %d at %s:%d (librdkafka %s)" % (
            NAME, c.cluster_id, node.id, node.host, node.port, __import__("confluent_kafka").libversion()[0]), flush=True)

    def create():
        one(admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1, config={
            "cleanup.policy": "compact", "retention.ms": "3600000"})], request_timeout=15))
        want_error("create_topics existing", lambda: one(admin.create_topics(
            [NewTopic(topic, num_partitions=1, replication_factor=1)], request_timeout=15)),
            KafkaError.TOPIC_ALREADY_EXISTS)
        want_error("create_topics cleanup.policy=bogus", lambda: one(admin.create_topics(
            [NewTopic(topic + "-bad", num_partitions=1, replication_factor=1,
                      config={"cleanup.policy": "bogus"})], request_timeout=15)), KafkaError.INVALID_CONFIG)
        want_error("create_topics 0 partitions", lambda: one(admin.create_topics(
            [NewTopic(topic + "-bad", num_partitions=0, replication_factor=1)], request_timeout=15)),
            KafkaError.INVALID_PARTITIONS)
        one(admin.create_topics([NewTopic(topic + "-validate", num_partitions=1, replication_factor=1)],
                                validate_only=True, request_timeout=15))
        names = admin.list_topics(timeout=15).topics
        want(topic + "-validate" not in names, "create_topics validate_only created the topic")
        want(topic + "-bad" not in names, "a failed create_topics created the topic")

    def describe_topics():
        d = partitions_of(topic)
        want(d.name == topic and not d.is_internal and d.topic_id is not None and str(d.topic_id) != "",
             "describe_topics: %r" % d)
        want([p.id for p in d.partitions] == [0, 1, 2], "describe_topics: partitions %r" % d.partitions)
        for p in d.partitions:
            want(p.leader is not None and p.leader.id == state["node"] and [r.id for r in p.replicas] ==
                 [state["node"]] and [r.id for r in p.isr] == [state["node"]],
                 "describe_topics: partition %r" % p)
        want_error("describe_topics unknown", lambda: partitions_of(topic + "-nope"),
                   KafkaError.UNKNOWN_TOPIC_OR_PART)

    def describe_configs():
        m = describe(res)
        want_entry("describe_configs cleanup.policy", m.get("cleanup.policy"), "compact", TOPIC,
                   "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete")
        want_entry("describe_configs retention.ms", m.get("retention.ms"), "3600000", TOPIC,
                   "DYNAMIC_TOPIC_CONFIG:retention.ms=3600000")
        want_entry("describe_configs segment.index.bytes", m.get("segment.index.bytes"), "10485760", DEFAULT,
                   "DEFAULT_CONFIG:log.index.size.max.bytes=10485760")
        for name in ("segment.bytes", "max.message.bytes", "compression.type", "min.compaction.lag.ms",
                     "delete.retention.ms", "message.timestamp.type"):
            want(name in m, "describe_configs: no %s" % name)
        b = describe(ConfigResource(ResourceType.BROKER, str(state["node"])))
        want_entry("describe_configs broker log.cleanup.policy", b.get("log.cleanup.policy"), "delete", DEFAULT,
                   "DEFAULT_CONFIG:log.cleanup.policy=delete")
        want(b.get("log.segment.bytes") is not None and m["segment.bytes"].value == b["log.segment.bytes"].value,
             "describe_configs: topic segment.bytes %s but broker %s" % (
                 show(m.get("segment.bytes")), show(b.get("log.segment.bytes"))))
        want_error("describe_configs unknown topic",
                   lambda: describe(ConfigResource(ResourceType.TOPIC, topic + "-nope")),
                   KafkaError.UNKNOWN_TOPIC_OR_PART)

    def incremental_alter():
        incremental(res, ("cleanup.policy", "delete", AlterConfigOpType.APPEND))
        want_entry("APPEND cleanup.policy delete",
                   await_entry(res, "cleanup.policy", lambda e: e.value == "compact,delete"), "compact,delete",
                   TOPIC, "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete",
                   "DEFAULT_CONFIG:log.cleanup.policy=delete")
        incremental(res, ("cleanup.policy", "compact", AlterConfigOpType.SUBTRACT))
        want_entry("SUBTRACT cleanup.policy compact",
                   await_entry(res, "cleanup.policy", lambda e: e.value == "delete"), "delete", TOPIC,
                   "DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete", "DEFAULT_CONFIG:log.cleanup.policy=delete")
        incremental(res, ("cleanup.policy", "compact", AlterConfigOpType.SET))
        want_entry("SET cleanup.policy compact",
                   await_entry(res, "cleanup.policy", lambda e: e.value == "compact"), "compact", TOPIC,
                   "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete")
        incremental(res, ("cleanup.policy", None, AlterConfigOpType.DELETE))
        want_entry("DELETE cleanup.policy",
                   await_entry(res, "cleanup.policy", lambda e: src(e.source) == DEFAULT.name), "delete", DEFAULT,
                   "DEFAULT_CONFIG:log.cleanup.policy=delete")
        incremental(res, ("cleanup.policy", "compact", AlterConfigOpType.SET), validate_only=True)
        time.sleep(0.5)
        e = describe(res).get("cleanup.policy")
        want(e is not None and e.value == "delete", "validate_only SET changed it: %s" % show(e))
        want_error("SET cleanup.policy=bogus",
                   lambda: incremental(res, ("cleanup.policy", "bogus", AlterConfigOpType.SET)),
                   KafkaError.INVALID_CONFIG)
        want_error("APPEND retention.ms",
                   lambda: incremental(res, ("retention.ms", "5", AlterConfigOpType.APPEND)),
                   KafkaError.INVALID_CONFIG)
        want_error("SET on an unknown topic",
                   lambda: incremental(ConfigResource(ResourceType.TOPIC, topic + "-nope"),
                                       ("retention.ms", "5", AlterConfigOpType.SET)),
                   KafkaError.UNKNOWN_TOPIC_OR_PART)
        # A per-broker dynamic config reaches the topic (librdkafka cannot
        # name the cluster-default resource "": java-admin covers that).
        # confluent-kafka keeps synonyms in a dict by name, so the
        # DYNAMIC_BROKER_CONFIG synonym is overwritten by the DEFAULT_CONFIG
        # one of the same name (java-admin checks the whole chain).
        broker_res = ConfigResource(ResourceType.BROKER, str(state["node"]))
        incremental(broker_res, ("log.retention.bytes", "1073741824", AlterConfigOpType.SET))
        want_entry("broker log.retention.bytes on the topic",
                   await_entry(res, "retention.bytes", lambda e: e.value == "1073741824" and
                               src(e.source) == DYN_BROKER.name), "1073741824", DYN_BROKER,
                   "DEFAULT_CONFIG:log.retention.bytes=-1")
        want_entry("broker log.retention.bytes on the broker",
                   await_entry(broker_res, "log.retention.bytes", lambda e: e.value == "1073741824"), "1073741824",
                   DYN_BROKER, "DEFAULT_CONFIG:log.retention.bytes=-1")
        incremental(broker_res, ("log.retention.bytes", None, AlterConfigOpType.DELETE))
        want_entry("broker log.retention.bytes deleted",
                   await_entry(res, "retention.bytes", lambda e: e.value == "-1" and
                               src(e.source) == DEFAULT.name), "-1", DEFAULT,
                   "DEFAULT_CONFIG:log.retention.bytes=-1")
        want_error("SET log.dirs dynamically", lambda: incremental(
            broker_res, ("log.dirs", "/tmp/x", AlterConfigOpType.SET)), KafkaError.INVALID_REQUEST)

    def legacy_alter():
        # AlterConfigs replaces the whole set: retention.ms goes back to its default.
        one(admin.alter_configs([ConfigResource(ResourceType.TOPIC, topic, set_config={
            "cleanup.policy": "compact", "segment.ms": "600000"})], request_timeout=15))
        e = await_entry(res, "segment.ms", lambda e: e.value == "600000")
        want_entry("alter_configs segment.ms", e, "600000", TOPIC, "DYNAMIC_TOPIC_CONFIG:segment.ms=600000")
        m = describe(res)
        want_entry("alter_configs cleanup.policy", m.get("cleanup.policy"), "compact", TOPIC,
                   "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete")
        # No synonym: Kafka starts the chain at log.retention.ms, which is unset.
        want_entry("alter_configs dropped retention.ms", m.get("retention.ms"), "604800000", DEFAULT)
        one(admin.alter_configs([ConfigResource(ResourceType.TOPIC, topic, set_config={
            "cleanup.policy": "delete"})], validate_only=True, request_timeout=15))
        time.sleep(0.5)
        e = describe(res).get("cleanup.policy")
        want(e is not None and e.value == "compact", "alter_configs validate_only changed it: %s" % show(e))
        want_error("alter_configs cleanup.policy=bogus", lambda: one(admin.alter_configs([ConfigResource(
            ResourceType.TOPIC, topic, set_config={"cleanup.policy": "bogus"})], request_timeout=15)),
            KafkaError.INVALID_CONFIG)
        want_error("alter_configs unknown topic", lambda: one(admin.alter_configs([ConfigResource(
            ResourceType.TOPIC, topic + "-nope", set_config={"retention.ms": "1000"})], request_timeout=15)),
            KafkaError.UNKNOWN_TOPIC_OR_PART)

    def create_partitions():
        one(admin.create_partitions([NewPartitions(topic, 5)], request_timeout=15))
        d = None
        for _ in range(50):
            d = partitions_of(topic)
            if len(d.partitions) == 5:
                break
            time.sleep(0.2)
        want(len(d.partitions) == 5, "create_partitions: %d partitions, want 5" % len(d.partitions))
        want_error("create_partitions shrink",
                   lambda: one(admin.create_partitions([NewPartitions(topic, 2)], request_timeout=15)),
                   KafkaError.INVALID_PARTITIONS)
        want_error("create_partitions same count",
                   lambda: one(admin.create_partitions([NewPartitions(topic, 5)], request_timeout=15)),
                   KafkaError.INVALID_PARTITIONS)
        want_error("create_partitions unknown topic",
                   lambda: one(admin.create_partitions([NewPartitions(topic + "-nope", 2)], request_timeout=15)),
                   KafkaError.UNKNOWN_TOPIC_OR_PART)
        want_error("create_partitions unknown broker", lambda: one(admin.create_partitions(
            [NewPartitions(topic, 6, replica_assignment=[[state["node"] + 99]])], request_timeout=15)),
            KafkaError.INVALID_REPLICA_ASSIGNMENT)
        one(admin.create_partitions([NewPartitions(topic, 7)], validate_only=True, request_timeout=15))
        time.sleep(0.5)
        n = len(partitions_of(topic).partitions)
        want(n == 5, "create_partitions validate_only: %d partitions, want 5" % n)

    def offsets():
        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "acks": "all",
                      "message.timeout.ms": 20000, **DEBUG})
        for i in range(10):
            p.produce(topic, value=b"value-%d" % i, key=b"k%d" % i, partition=0,
                      timestamp=1_700_000_000_000 + i)
        want(p.flush(30) == 0, "produce: records left unsent")
        tp0, tp4 = TopicPartition(topic, 0), TopicPartition(topic, 4)
        r = admin.list_offsets({tp0: OffsetSpec.latest(), tp4: OffsetSpec.latest()}, request_timeout=15)
        got = {tp.partition: f.result(timeout=TIMEOUT).offset for tp, f in r.items()}
        want(got == {0: 10, 4: 0}, "list_offsets latest: %r" % got)
        r = admin.list_offsets({tp0: OffsetSpec.earliest()}, request_timeout=15)
        want(one(r).offset == 0, "list_offsets earliest: %r" % one(r))
        r = one(admin.list_offsets({tp0: OffsetSpec.max_timestamp()}, request_timeout=15))
        want(r.offset == 9 and r.timestamp == 1_700_000_000_009, "list_offsets max_timestamp: %r" % r)

    def elect():
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        for t in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
            # (request_timeout makes confluent-kafka 2.16.1 raise a SystemError.)
            r = admin.elect_leaders(t, tps).result(timeout=TIMEOUT)
            for tp in tps:
                e = next((v for k, v in r.items() if k.topic == tp.topic and k.partition == tp.partition), "absent")
                want(error_code(e) == KafkaError.ELECTION_NOT_NEEDED,
                     "elect_leaders %s %s-%d: %r, want ELECTION_NOT_NEEDED" % (t, tp.topic, tp.partition, e))
        r = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 99)]).result(timeout=TIMEOUT)
        e = next(iter(r.values()), "absent")
        want(error_code(e) == KafkaError.UNKNOWN_TOPIC_OR_PART,
             "elect_leaders %s-99: %r, want UNKNOWN_TOPIC_OR_PART" % (topic, e))

    def delete():
        one(admin.delete_topics([topic], operation_timeout=10, request_timeout=15))
        for _ in range(50):
            if topic not in admin.list_topics(timeout=15).topics:
                break
            time.sleep(0.2)
        else:
            errors.append("delete_topics: %s still listed after 10 s" % topic)
        want_error("delete_topics again", lambda: one(admin.delete_topics([topic], request_timeout=15)),
                   KafkaError.UNKNOWN_TOPIC_OR_PART)
        want_error("describe_topics deleted", lambda: partitions_of(topic), KafkaError.UNKNOWN_TOPIC_OR_PART)

    step("describe_cluster", cluster)
    if "node" not in state:
        return
    step("create_topics", create)
    step("describe_topics", describe_topics)
    step("describe_configs", describe_configs)
    step("incremental_alter_configs", incremental_alter)
    step("alter_configs", legacy_alter)
    step("create_partitions", create_partitions)
    step("list_offsets", offsets)
    step("elect_leaders", elect)
    step("delete_topics", delete)


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        errors.append("aborted: %r" % exc)
    if errors:
        for err in errors:
            print("%s: FAIL %s" % (NAME, err))
        sys.exit(1)
    print("%s: OK" % NAME)
