package dev.kcompatd.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/**
 * java-848: the Java client with group.protocol=consumer (KIP-848): two
 * members splitting a topic, a member leaving (the other takes its
 * partitions, resuming at the committed offsets), the group and its
 * offsets through the admin client, and a broker-side regex subscription
 * that picks up a topic created after the member joined.
 *
 * Usage: Consumer848 BOOTSTRAP TOPIC. Exit 0 on success, 1 otherwise.
 */
public final class Consumer848 {
    static final int PARTITIONS = 4;
    static final int PER_ROUND = 200;
    static final Duration POLL = Duration.ofMillis(200);
    static final long WAIT_MS = 90_000;

    private Consumer848() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Consumer848 BOOTSTRAP TOPIC");
            System.exit(2);
        }
        List<String> errors = new ArrayList<>();
        try {
            run(args[0], args[1], errors);
        } catch (Exception e) {
            e.printStackTrace();
            errors.add("aborted: " + e);
        }
        if (errors.isEmpty()) {
            System.out.println("java-848: OK");
            System.exit(0);
        }
        for (String e : errors) {
            System.out.println("java-848: FAIL " + e);
        }
        System.exit(1);
    }

    static Properties consumerProps(String bootstrap, String group) {
        Properties cp = Next.consumerProps(bootstrap, group, "read_uncommitted");
        cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        return cp;
    }

    static void produce(String bootstrap, String topic, int partitions, String tag) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Next.producerProps(bootstrap))) {
            for (int part = 0; part < partitions; part++) {
                for (int i = 0; i < PER_ROUND / partitions; i++) {
                    p.send(new ProducerRecord<>(topic, part, (tag + "-" + part + "-" + i).getBytes(), new byte[] {1}));
                }
            }
            p.flush();
        }
    }

    /** Records what a member polled (failing on a record seen twice) and commits it. */
    static int pollAndCommit(KafkaConsumer<byte[], byte[]> c, String name, Map<String, String> seen, List<String> errors) {
        int n = 0;
        for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
            String k = r.topic() + "/" + new String(r.key());
            String prev = seen.put(k, name);
            if (prev != null && errors.size() < 20) {
                errors.add("record " + k + " consumed by " + prev + " and " + name);
            }
            n++;
        }
        if (n > 0) {
            c.commitSync();
        }
        return n;
    }

    static void run(String bootstrap, String topic, List<String> errors) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        String group = topic + "-g";
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);
            produce(bootstrap, topic, PARTITIONS, "a");
            Map<String, String> seen = new HashMap<>();

            // Two members split the topic.
            KafkaConsumer<byte[], byte[]> m1 = new KafkaConsumer<>(consumerProps(bootstrap, group));
            KafkaConsumer<byte[], byte[]> m2 = new KafkaConsumer<>(consumerProps(bootstrap, group));
            try {
                m1.subscribe(List.of(topic));
                m2.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + WAIT_MS;
                boolean split = false;
                while (System.currentTimeMillis() < deadline) {
                    pollAndCommit(m1, "m1", seen, errors);
                    pollAndCommit(m2, "m2", seen, errors);
                    Set<TopicPartition> a1 = m1.assignment(), a2 = m2.assignment();
                    Set<TopicPartition> both = new HashSet<>(a1);
                    both.retainAll(a2);
                    if (!both.isEmpty()) {
                        errors.add("partitions assigned to both members at once: " + both);
                        return;
                    }
                    split = !a1.isEmpty() && !a2.isEmpty() && a1.size() + a2.size() == PARTITIONS;
                    if (split && seen.size() == PER_ROUND) {
                        break;
                    }
                }
                if (!split) {
                    errors.add("two members did not split " + PARTITIONS + " partitions: " + m1.assignment() + " / " + m2.assignment());
                    return;
                }
                if (seen.size() != PER_ROUND) {
                    errors.add("two members consumed " + seen.size() + " of " + PER_ROUND + " records");
                    return;
                }
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
                if (d.type() != GroupType.CONSUMER || d.members().size() != 2) {
                    errors.add("describeConsumerGroups: type " + d.type() + ", " + d.members().size() + " members, want CONSUMER with 2");
                }
            } finally {
                m2.close(Duration.ofSeconds(10)); // the member leaves
            }

            // The remaining member takes every partition and resumes at
            // the committed offsets: nothing is read twice.
            try {
                produce(bootstrap, topic, PARTITIONS, "b");
                long deadline = System.currentTimeMillis() + WAIT_MS;
                while (System.currentTimeMillis() < deadline && (seen.size() < 2 * PER_ROUND || m1.assignment().size() != PARTITIONS)) {
                    pollAndCommit(m1, "m1", seen, errors);
                }
                if (m1.assignment().size() != PARTITIONS || seen.size() != 2 * PER_ROUND) {
                    errors.add("after a member left: assignment " + m1.assignment() + ", " + seen.size() + " of " + 2 * PER_ROUND + " records");
                    return;
                }
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
                if (d.members().size() != 1 || d.groupState() != GroupState.STABLE) {
                    errors.add("after a member left: " + d.members().size() + " members, state " + d.groupState());
                }
            } finally {
                m1.close(Duration.ofSeconds(10));
            }

            // Offsets through the admin client: every partition committed
            // at its end.
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : ends.entrySet()) {
                OffsetAndMetadata c = committed.get(e.getKey());
                if (c == null || c.offset() != e.getValue().offset()) {
                    errors.add("committed offset of " + e.getKey() + " is " + (c == null ? "none" : c.offset()) + ", end " + e.getValue().offset());
                }
            }

            // A regex subscription (broker-side, RE2J) picks up a topic
            // created after the member joined.
            String first = topic + "-rx-1", later = topic + "-rx-2", other = topic + "-other";
            admin.createTopics(List.of(new NewTopic(first, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            produce(bootstrap, first, 1, "rx1");
            Map<String, String> rxSeen = new HashMap<>();
            try (KafkaConsumer<byte[], byte[]> rx = new KafkaConsumer<>(consumerProps(bootstrap, group + "-rx"))) {
                rx.subscribe(new SubscriptionPattern(topic.replace(".", "\\.") + "-rx-.*"));
                long deadline = System.currentTimeMillis() + WAIT_MS;
                while (System.currentTimeMillis() < deadline && rxSeen.size() < PER_ROUND) {
                    pollAndCommit(rx, "rx", rxSeen, errors);
                }
                if (rxSeen.size() != PER_ROUND) {
                    errors.add("regex member consumed " + rxSeen.size() + " of " + PER_ROUND + " records of " + first);
                    return;
                }
                admin.createTopics(List.of(new NewTopic(later, 2, (short) 1), new NewTopic(other, 1, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
                produce(bootstrap, later, 2, "rx2");
                produce(bootstrap, other, 1, "other");
                deadline = System.currentTimeMillis() + WAIT_MS;
                while (System.currentTimeMillis() < deadline && rxSeen.size() < 2 * PER_ROUND) {
                    pollAndCommit(rx, "rx", rxSeen, errors);
                }
                // A little longer: a record of the topic that does not
                // match would show up now.
                for (int i = 0; i < 5; i++) {
                    pollAndCommit(rx, "rx", rxSeen, errors);
                }
                if (rxSeen.size() != 2 * PER_ROUND) {
                    errors.add("regex member consumed " + rxSeen.size() + " of " + 2 * PER_ROUND + " records after " + later + " was created; assignment " + rx.assignment());
                }
                for (String k : rxSeen.keySet()) {
                    if (k.startsWith(other + "/")) {
                        errors.add("regex member consumed " + k + " of a topic that does not match");
                        break;
                    }
                }
            }
        }
    }
}
