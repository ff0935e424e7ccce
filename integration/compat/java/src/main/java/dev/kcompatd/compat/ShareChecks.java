package dev.kcompatd.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Share groups (KIP-932) with the Java KafkaShareConsumer 4.3: two
 * consumers on one partition with explicit acknowledgement, released
 * records redelivered with a higher delivery count, redelivery after the
 * acquisition lock times out, the group listed as SHARE, and the share
 * group's offsets through the Admin client (list, alter, delete).
 *
 * Usage: ShareChecks BOOTSTRAP TOPIC. Exit 0 on success, 1 on the first
 * failed check. Every wait is bounded.
 */
public final class ShareChecks {
    static final int FIRST = 10; // records of the release/redelivery phase
    static final int SECOND = 3; // records of the lock timeout phase
    static final long WAIT_MS = 60_000;

    static String bootstrap;

    static final class Fail extends Exception {
        Fail(String m) { super(m); }
    }

    static void check(boolean ok, String what) throws Fail {
        if (!ok) {
            throw new Fail(what);
        }
    }

    static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    /** Polls cond every 200 ms for at most ms; false if it never held. */
    static boolean waitFor(long ms, BooleanSupplier cond) throws InterruptedException {
        long end = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < end) {
            if (cond.getAsBoolean()) {
                return true;
            }
            Thread.sleep(200);
        }
        return cond.getAsBoolean();
    }

    static KafkaShareConsumer<String, String> consumer(String group, String clientId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put("share.acknowledgement.mode", "explicit");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    static void produce(String topic, int from, int to) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p)) {
            for (int i = from; i < to; i++) {
                pr.send(new ProducerRecord<>(topic, 0, ("k" + i).getBytes(StandardCharsets.UTF_8),
                        ("v" + i).getBytes(StandardCharsets.UTF_8))).get(30, TimeUnit.SECONDS);
            }
        }
    }

    static short count(ConsumerRecord<String, String> r) throws Fail {
        Optional<Short> c = r.deliveryCount();
        check(c.isPresent(), "record at offset " + r.offset() + " has no delivery count");
        return c.get();
    }

    static int brokerInt(Admin admin, String name, int dflt) throws Exception {
        String id = get(admin.describeCluster().nodes()).iterator().next().idString();
        ConfigResource br = new ConfigResource(ConfigResource.Type.BROKER, id);
        Config c = get(admin.describeConfigs(List.of(br)).all()).get(br);
        ConfigEntry e = c.get(name);
        return e == null || e.value() == null ? dflt : Integer.parseInt(e.value());
    }

    static Map<TopicPartition, SharePartitionOffsetInfo> offsets(Admin admin, String group) throws Exception {
        return get(admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: ShareChecks BOOTSTRAP TOPIC");
            System.exit(2);
        }
        bootstrap = args[0];
        try {
            run(args[1]);
        } catch (Fail f) {
            System.out.println("java-share: FAIL " + f.getMessage());
            System.exit(1);
        }
        System.out.println("java-share: ok");
        System.exit(0);
    }

    static void run(String topic) throws Exception {
        String group = topic + "-share";
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            FinalizedVersionRange share = get(admin.describeFeatures().featureMetadata())
                    .finalizedFeatures().get("share.version");
            check(share != null && share.maxVersionLevel() >= 1, "share.version not finalized at 1: " + share);

            get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
            produce(topic, 0, FIRST);

            // The group's configs first, as Kafka's docs do: read from the
            // earliest offset, and a short acquisition lock (bounded below
            // by the broker's group.share.min.record.lock.duration.ms).
            int lockMs = Math.max(2000, brokerInt(admin, "group.share.min.record.lock.duration.ms", 15000));
            ConfigResource gr = new ConfigResource(ConfigResource.Type.GROUP, group);
            get(admin.incrementalAlterConfigs(Map.of(gr, List.of(
                    new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", Integer.toString(lockMs)),
                            AlterConfigOp.OpType.SET)))).all());
            Config gc = get(admin.describeConfigs(List.of(gr)).all()).get(gr);
            check(gc.get("share.auto.offset.reset") != null && "earliest".equals(gc.get("share.auto.offset.reset").value()),
                    "group config share.auto.offset.reset not earliest: " + gc.get("share.auto.offset.reset"));

            releaseAndRedeliver(admin, topic, group);
            lockTimeout(admin, topic, group, lockMs);

            // Listed as a share group.
            Collection<GroupListing> listed = get(admin.listGroups(ListGroupsOptions.forShareGroups()).all());
            boolean found = false;
            for (GroupListing g : listed) {
                if (g.groupId().equals(group)) {
                    found = true;
                    check(g.type().equals(Optional.of(GroupType.SHARE)), "group listed with type " + g.type());
                }
            }
            check(found, "listGroups(share) lacks " + group + ": " + listed);

            adminOffsets(admin, topic, group, tp);
        }
    }

    /**
     * Two consumers on the one partition; every first delivery of an odd
     * offset is released and must come back with delivery count 2; every
     * offset is accepted exactly once.
     */
    static void releaseAndRedeliver(Admin admin, String topic, String group) throws Exception {
        try (KafkaShareConsumer<String, String> a = consumer(group, "share-a");
             KafkaShareConsumer<String, String> b = consumer(group, "share-b")) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            Map<Long, Short> accepted = new TreeMap<>();
            Set<Long> released = new TreeSet<>();
            Set<String> receivers = new TreeSet<>();
            long end = System.currentTimeMillis() + WAIT_MS;
            while (accepted.size() < FIRST && System.currentTimeMillis() < end) {
                for (KafkaShareConsumer<String, String> c : List.of(a, b)) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                    for (ConsumerRecord<String, String> r : recs) {
                        short n = count(r);
                        check(r.value().equals("v" + r.offset()), "offset " + r.offset() + " has value " + r.value());
                        receivers.add(c == a ? "a" : "b");
                        if (n == 1 && r.offset() % 2 == 1) {
                            check(released.add(r.offset()), "offset " + r.offset() + " delivered twice with count 1");
                            c.acknowledge(r, AcknowledgeType.RELEASE);
                            continue;
                        }
                        check(!accepted.containsKey(r.offset()), "offset " + r.offset() + " delivered after it was accepted");
                        if (r.offset() % 2 == 1) {
                            check(n >= 2, "released offset " + r.offset() + " redelivered with count " + n);
                        }
                        accepted.put(r.offset(), n);
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                    if (!recs.isEmpty()) {
                        c.commitSync(Duration.ofSeconds(30));
                    }
                }
            }
            check(accepted.size() == FIRST, "accepted " + accepted + " of " + FIRST + " records within "
                    + WAIT_MS + " ms (released " + released + ")");
            check(released.size() == FIRST / 2, "released " + released);

            // Both members are assigned the one partition.
            ShareGroupDescription d = get(admin.describeShareGroups(List.of(group)).describedGroups().get(group));
            check(d.members().size() == 2, "share group has members " + d.members());
            for (var m : d.members()) {
                check(m.assignment().topicPartitions().contains(new TopicPartition(topic, 0)),
                        "member " + m.clientId() + " assigned " + m.assignment().topicPartitions());
            }
            System.out.println("java-share: released and redelivered " + released + ", received by " + receivers);
        }
    }

    /**
     * A consumer acquires records and never acknowledges them: once the
     * lock times out another consumer gets them with a higher delivery
     * count.
     */
    static void lockTimeout(Admin admin, String topic, String group, int lockMs) throws Exception {
        produce(topic, FIRST, FIRST + SECOND);
        try (KafkaShareConsumer<String, String> a = consumer(group, "share-holder")) {
            a.subscribe(List.of(topic));
            Set<Long> held = new TreeSet<>();
            long end = System.currentTimeMillis() + WAIT_MS;
            while (held.size() < SECOND && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : a.poll(Duration.ofMillis(500))) {
                    check(r.offset() >= FIRST, "offset " + r.offset() + " delivered again after it was accepted");
                    check(count(r) == 1, "new offset " + r.offset() + " has delivery count " + count(r));
                    held.add(r.offset());
                }
            }
            check(held.size() == SECOND, "holder acquired " + held);
            long acquired = System.currentTimeMillis();
            // The holder stays a member (its heartbeats run on their own
            // thread) and does not poll again, so its locks just expire.
            try (KafkaShareConsumer<String, String> c = consumer(group, "share-taker")) {
                c.subscribe(List.of(topic));
                Set<Long> taken = new TreeSet<>();
                end = System.currentTimeMillis() + WAIT_MS + lockMs;
                while (taken.size() < SECOND && System.currentTimeMillis() < end) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                    for (ConsumerRecord<String, String> r : recs) {
                        // At least 2: the holder's background fetches may
                        // acquire the records again after the lock expired.
                        check(count(r) >= 2, "offset " + r.offset() + " redelivered with count " + count(r));
                        check(held.contains(r.offset()), "taker got offset " + r.offset());
                        taken.add(r.offset());
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                    if (!recs.isEmpty()) {
                        c.commitSync(Duration.ofSeconds(30));
                    }
                }
                long waited = System.currentTimeMillis() - acquired;
                check(taken.size() == SECOND, "after the lock timeout the taker got " + taken);
                System.out.println("java-share: lock of " + lockMs + " ms expired; redelivered after " + waited + " ms");
            }
        }
    }

    /** Waits (at most 30 s) for the group to be EMPTY. */
    static void waitEmpty(Admin admin, String group, String when) throws Exception {
        boolean ok = waitFor(30_000, () -> {
            try {
                return get(admin.describeShareGroups(List.of(group)).describedGroups().get(group))
                        .groupState() == GroupState.EMPTY;
            } catch (Exception e) {
                return false;
            }
        });
        check(ok, "share group did not become EMPTY " + when);
    }

    /** Offsets through the Admin client, on the group once it is empty. */
    static void adminOffsets(Admin admin, String topic, String group, TopicPartition tp) throws Exception {
        long end = FIRST + SECOND;
        Map<TopicPartition, SharePartitionOffsetInfo>[] got = new Map[1];
        // Every record is acknowledged: no lag. The start offset moves
        // past acknowledged records only on a later acquisition (Kafka
        // 4.3.1 shows 10 here, its delivery-complete count covering
        // 10-12), so any start offset from there to the end is right.
        boolean ok = waitFor(10_000, () -> {
            try {
                got[0] = offsets(admin, group);
                SharePartitionOffsetInfo i = got[0].get(tp);
                return i != null && i.lag().orElse(-1L) == 0;
            } catch (Exception e) {
                return false;
            }
        });
        check(ok, "listShareGroupOffsets: " + got[0] + ", want lag 0");
        SharePartitionOffsetInfo info = got[0].get(tp);
        check(info.startOffset() >= FIRST && info.startOffset() <= end, "start offset " + info.startOffset());

        waitEmpty(admin, group, "after its consumers closed");

        get(admin.alterShareGroupOffsets(group, Map.of(tp, 5L)).all());
        SharePartitionOffsetInfo altered = offsets(admin, group).get(tp);
        check(altered != null && altered.startOffset() == 5, "after alterShareGroupOffsets(5): " + altered);

        // A consumer now starts at offset 5.
        try (KafkaShareConsumer<String, String> c = consumer(group, "share-after-alter")) {
            c.subscribe(List.of(topic));
            List<Long> seen = new ArrayList<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (seen.size() < end - 5 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : recs) {
                    seen.add(r.offset());
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!recs.isEmpty()) {
                    c.commitSync(Duration.ofSeconds(30));
                }
            }
            seen.sort(null);
            check(!seen.isEmpty() && seen.get(0) == 5 && seen.size() == end - 5,
                    "after the alter a consumer got offsets " + seen);
        }
        waitEmpty(admin, group, "again");

        get(admin.deleteShareGroupOffsets(group, Set.of(topic)).all());
        Map<TopicPartition, SharePartitionOffsetInfo> after = offsets(admin, group);
        check(after.get(tp) == null, "after deleteShareGroupOffsets: " + after);
        System.out.println("java-share: offsets listed " + info + ", altered to 5, deleted");
    }
}
