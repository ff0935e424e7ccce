package dev.kcompatd.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams 4.3 application on the streams rebalance protocol
 * (KIP-1071, group.protocol=streams) with exactly_once_v2: a stateful count
 * of words regrouped by value (so a repartition topic and a changelog topic
 * are needed, which the broker creates), its output read with read_committed
 * and checked exactly: per word the counts emitted only grow and the last
 * one is the number of input records with that word. Then the application
 * is closed, more input is produced, and it starts again with an empty
 * state directory: it must restore its store from the changelog and resume
 * from its committed offsets, so the final counts are again exact. The group
 * must be listed as a streams group.
 *
 * Usage: StreamsChecks BOOTSTRAP TOPIC. Exit 0 on success, 1 on failure.
 */
public final class StreamsChecks {
    static final int PARTITIONS = 3;
    static final int WORDS = 7;
    static final Duration DEADLINE = Duration.ofSeconds(120);

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: StreamsChecks BOOTSTRAP TOPIC");
            System.exit(2);
        }
        List<String> errors = new ArrayList<>();
        try {
            run(args[0], args[1], errors);
        } catch (Exception e) {
            errors.add("exception: " + e);
            e.printStackTrace();
        }
        if (!errors.isEmpty()) {
            for (String e : errors) {
                System.err.println("java-streams: " + e);
            }
            System.exit(1);
        }
        System.out.println("java-streams: ok");
        System.exit(0);
    }

    static void run(String bootstrap, String topic, List<String> errors) throws Exception {
        String in = topic + "-in", out = topic + "-out", app = topic + "-app";
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(in, PARTITIONS, (short) 1), new NewTopic(out, 1, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
        }
        Map<String, Long> expected = new TreeMap<>();
        produce(bootstrap, in, 0, 300, expected);
        Path state1 = Files.createTempDirectory("kcompatd-streams-");
        try (KafkaStreams streams = start(bootstrap, app, in, out, state1)) {
            awaitCounts(bootstrap, out, expected, "first run", errors);
            if (!errors.isEmpty()) {
                return;
            }
            checkListed(bootstrap, app, errors);
            streams.close(Duration.ofSeconds(30));
        }
        produce(bootstrap, in, 300, 200, expected);
        // A fresh state directory: the store comes back from the changelog.
        Path state2 = Files.createTempDirectory("kcompatd-streams-");
        try (KafkaStreams streams = start(bootstrap, app, in, out, state2)) {
            awaitCounts(bootstrap, out, expected, "after restart", errors);
            streams.close(Duration.ofSeconds(30));
        }
        for (Path p : List.of(state1, state2)) {
            try (Stream<Path> w = Files.walk(p)) {
                w.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    /** Produces n records from first on: key "r<i>", value the word of i. */
    static void produce(String bootstrap, String topic, int first, int n, Map<String, Long> expected) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = first; i < first + n; i++) {
                String word = "w" + (i * 31 % WORDS);
                expected.merge(word, 1L, Long::sum);
                p.send(new ProducerRecord<>(topic, i % PARTITIONS, "r" + i, word));
            }
            p.flush();
        }
    }

    static KafkaStreams start(String bootstrap, String app, String in, String out, Path stateDir) throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((k, v) -> v, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        sp.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        KafkaStreams s = new KafkaStreams(b.build(), sp);
        s.start();
        long until = System.nanoTime() + DEADLINE.toNanos();
        while (s.state() != KafkaStreams.State.RUNNING) {
            if (System.nanoTime() > until || s.state() == KafkaStreams.State.ERROR
                    || s.state() == KafkaStreams.State.NOT_RUNNING) {
                KafkaStreams.State st = s.state();
                s.close(Duration.ofSeconds(10));
                throw new IllegalStateException("streams did not reach RUNNING: " + st);
            }
            Thread.sleep(100);
        }
        return s;
    }

    /**
     * Reads the whole output (read_committed) until the last count of every
     * word is the expected one; a count that does not grow, or one above
     * the expected, is an error (a record processed twice).
     */
    static void awaitCounts(String bootstrap, String out, Map<String, Long> expected, String phase, List<String> errors) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        long until = System.nanoTime() + DEADLINE.toNanos();
        Map<String, Long> last = new HashMap<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp, new StringDeserializer(), new LongDeserializer())) {
            TopicPartition tp = new TopicPartition(out, 0);
            c.assign(Set.of(tp));
            c.seekToBeginning(Set.of(tp));
            while (!last.equals(expected)) {
                if (System.nanoTime() > until) {
                    errors.add(phase + ": counts " + new TreeMap<>(last) + ", want " + expected);
                    return;
                }
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                    Long prev = last.put(r.key(), r.value());
                    Long want = expected.get(r.key());
                    if (want == null || r.value() > want || (prev != null && r.value() <= prev)) {
                        errors.add(phase + ": word " + r.key() + " counted " + r.value() + " after " + prev + ", want at most " + want);
                        return;
                    }
                }
            }
        }
    }

    static void checkListed(String bootstrap, String app, List<String> errors) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            boolean found = false;
            for (GroupListing g : admin.listGroups(new ListGroupsOptions().withTypes(Set.of(GroupType.STREAMS)))
                    .all().get(30, TimeUnit.SECONDS)) {
                if (g.groupId().equals(app)) {
                    found = true;
                    if (g.type().orElse(null) != GroupType.STREAMS || !"streams".equals(g.protocol())) {
                        errors.add("group listed as type " + g.type() + " protocol " + g.protocol());
                    }
                }
            }
            if (!found) {
                errors.add("group " + app + " not listed as a streams group");
            }
        }
    }
}
