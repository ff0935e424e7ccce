package dev.kcompatd.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Round trip through a broker with the official Java client: create a topic
 * with one partition per compression codec, produce the same deterministic
 * records with each codec (idempotence off, acks=all), read everything back
 * with an assigned consumer (no group) and compare byte for byte, in order.
 *
 * Usage: Main BOOTSTRAP TOPIC [next]. Exit 0 on success, 1 on any mismatch/error.
 * With "next", runs {@link Next} instead: consumer groups, idempotence and
 * transactions, which the first slice of kcompatd does not serve yet.
 */
public final class Main {
    static final int RECORDS = 1000;
    static final long BASE_TS = 1_700_000_000_000L;
    static final String[] CODECS = {"snappy", "lz4", "zstd", "gzip", "none"};

    record Rec(byte[] key, byte[] value, List<Header> headers, long ts) {}

    /** The record set every compat client produces (same rules in Python and JS). */
    static Rec gen(int i) {
        byte[] key = i % 7 == 0 ? null
                : i % 11 == 0 ? new byte[0]
                : ("key-" + i).getBytes(StandardCharsets.UTF_8);
        byte[] value;
        if (i % 13 == 0 && key != null) { // kafka-python refuses null key + null value
            value = null;
        } else if (i % 17 == 0) {
            value = new byte[0];
        } else {
            int n = (i * 37) % 300 + (i % 100 == 1 ? 20000 : 0);
            value = new byte[n];
            for (int j = 0; j < n; j++) {
                value[j] = (byte) ((i * 31 + j) & 0xff);
            }
        }
        List<Header> h = new ArrayList<>();
        if (i % 3 == 1) {
            h.add(new RecordHeader("h1", ("v-" + i).getBytes(StandardCharsets.UTF_8)));
        } else if (i % 3 == 2) {
            h.add(new RecordHeader("h1", "a".getBytes(StandardCharsets.UTF_8)));
            h.add(new RecordHeader("h2", null));
            h.add(new RecordHeader("h1", "dup".getBytes(StandardCharsets.UTF_8)));
        }
        return new Rec(key, value, h, BASE_TS + i);
    }

    public static void main(String[] args) throws Exception {
        boolean next = args.length == 3 && args[2].equals("next");
        if (args.length != 2 && !next) {
            System.err.println("usage: Main BOOTSTRAP TOPIC [next]");
            System.exit(2);
        }
        List<String> errors = new ArrayList<>();
        try {
            if (next) {
                Next.run(args[0], args[1], errors);
            } else {
                run(args[0], args[1], errors);
            }
        } catch (Exception e) {
            e.printStackTrace();
            errors.add("aborted: " + e);
        }
        String name = next ? "java-next" : "java";
        if (errors.isEmpty()) {
            System.out.println(name + ": OK");
            System.exit(0);
        }
        for (String e : errors) {
            System.out.println(name + ": FAIL " + e);
        }
        System.exit(1);
    }

    static void run(String bootstrap, String topic, List<String> errors) throws Exception {

        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, CODECS.length, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
            System.out.println("java: created topic " + topic + " with " + CODECS.length + " partitions");
        }

        // partition -> offsets the broker assigned, in send order
        Map<Integer, List<Long>> offsets = new HashMap<>();
        for (int p = 0; p < CODECS.length; p++) {
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, CODECS[p]);
            pp.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            // Without idempotence only one request in flight keeps retried batches in order.
            pp.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
            pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
            pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
            pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            List<Future<RecordMetadata>> futures = new ArrayList<>(RECORDS);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
                for (int i = 0; i < RECORDS; i++) {
                    Rec r = gen(i);
                    futures.add(producer.send(new ProducerRecord<>(topic, p, r.ts(), r.key(), r.value(), r.headers())));
                }
                producer.flush();
            }
            List<Long> offs = new ArrayList<>(RECORDS);
            try {
                for (Future<RecordMetadata> f : futures) {
                    offs.add(f.get(30, TimeUnit.SECONDS).offset());
                }
            } catch (Exception e) {
                errors.add("produce " + CODECS[p] + " to partition " + p + ": " + e);
                continue;
            }
            for (int i = 0; i < offs.size(); i++) {
                if (offs.get(i) != i) {
                    errors.add("produce " + CODECS[p] + ": record " + i + " got offset " + offs.get(i));
                    break;
                }
            }
            offsets.put(p, offs);
            System.out.println("java: produced " + RECORDS + " records with " + CODECS[p] + " to partition " + p);
        }

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        cp.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        cp.put(ConsumerConfig.CHECK_CRCS_CONFIG, true);
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < CODECS.length; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            int total = 0;
            int expected = offsets.size() * RECORDS;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (total < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
                    total++;
                }
            }
            System.out.println("java: consumed " + total + " of " + expected + " records");
            // ListOffsets earliest/latest, asked while assigned (else the client warns).
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps, Duration.ofSeconds(30));
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofSeconds(30));
            for (TopicPartition tp : tps) {
                long want = offsets.containsKey(tp.partition()) ? RECORDS : -1;
                if (begin.get(tp) != 0) {
                    errors.add("ListOffsets earliest " + tp + " = " + begin.get(tp) + ", want 0");
                }
                if (want >= 0 && end.get(tp) != want) {
                    errors.add("ListOffsets latest " + tp + " = " + end.get(tp) + ", want " + want);
                }
            }
        }

        for (int p : offsets.keySet()) {
            List<ConsumerRecord<byte[], byte[]>> recs = got.getOrDefault(p, List.of());
            if (recs.size() != RECORDS) {
                errors.add("consume " + CODECS[p] + " partition " + p + ": got " + recs.size() + " records, want " + RECORDS);
            }
            for (int i = 0; i < Math.min(recs.size(), RECORDS); i++) {
                String diff = compare(gen(i), recs.get(i), i);
                if (diff != null) {
                    errors.add("consume " + CODECS[p] + " partition " + p + ": " + diff);
                    break;
                }
            }
        }

        edgeChecks(bootstrap, ap, cp, topic, errors);
        adminChecks(ap, topic, errors);
    }

    /** Consumer property set without group: byte arrays, no commits. */
    static Properties consumerProps(Properties cp, String reset) {
        Properties p = new Properties();
        p.putAll(cp);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset);
        return p;
    }

    /**
     * Behaviour a client can tell apart, checked against the data produced
     * above: seeks into the middle of a compressed batch, offsets by
     * timestamp, the max-timestamp offset, out-of-range fetches, automatic
     * topic creation, acks=0/1, oversized records and bad CreateTopics.
     */
    static void edgeChecks(String bootstrap, Properties ap, Properties cp, String topic, List<String> errors)
            throws Exception {
        // Seek into the middle of a batch (snappy on 0, uncompressed on 4):
        // the broker returns the whole batch, the client skips to 500.
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(cp, "none"))) {
            for (int p : new int[] {0, 4}) {
                TopicPartition tp = new TopicPartition(topic, p);
                c.assign(List.of(tp));
                c.seek(tp, 500);
                ConsumerRecord<byte[], byte[]> first = null;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                while (first == null && System.nanoTime() < deadline) {
                    var recs = c.poll(Duration.ofMillis(500)).records(tp);
                    if (!recs.isEmpty()) {
                        first = recs.get(0);
                    }
                }
                String diff = first == null ? "no records" : compare(gen(500), first, 500);
                if (diff != null) {
                    errors.add("seek to 500 on " + tp + ": " + diff);
                }

                // Offsets by timestamp (timestamps grow with the offset here).
                var byTime = c.offsetsForTimes(Map.of(tp, BASE_TS + 500, new TopicPartition(topic, (p + 1) % CODECS.length),
                        BASE_TS + RECORDS + 1000), Duration.ofSeconds(30));
                var at = byTime.get(tp);
                if (at == null || at.offset() != 500 || at.timestamp() != BASE_TS + 500) {
                    errors.add("ListOffsets timestamp " + (BASE_TS + 500) + " on " + tp + " = " + at + ", want offset 500");
                }
                var after = byTime.get(new TopicPartition(topic, (p + 1) % CODECS.length));
                if (after != null) {
                    errors.add("ListOffsets timestamp past the last record = " + after + ", want none (offset -1)");
                }
            }

            // Past the high watermark with auto.offset.reset=none: OFFSET_OUT_OF_RANGE.
            TopicPartition tp = new TopicPartition(topic, 4);
            c.assign(List.of(tp));
            c.seek(tp, RECORDS + 10);
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < deadline) {
                    c.poll(Duration.ofMillis(500));
                }
                errors.add("Fetch at offset " + (RECORDS + 10) + " > high watermark: no OFFSET_OUT_OF_RANGE");
            } catch (org.apache.kafka.clients.consumer.OffsetOutOfRangeException e) {
                // what Kafka does
            }
        }

        // Fetch limits far below the batch sizes: from Fetch v3 on the broker
        // still returns the first batch whole (KIP-74), so the reader progresses.
        Properties small = consumerProps(cp, "earliest");
        small.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 1024);
        small.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 1024);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(small)) {
            TopicPartition tp = new TopicPartition(topic, 4);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            int n = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (n < RECORDS && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    String diff = compare(gen(n), r, n);
                    if (diff != null) {
                        errors.add("fetch with 1 KiB limits on " + tp + ": " + diff);
                        n = RECORDS;
                        break;
                    }
                    n++;
                }
            }
            if (n < RECORDS) {
                errors.add("fetch with 1 KiB limits on " + tp + ": " + n + " of " + RECORDS + " records in 30 s");
            }
        }

        try (Admin admin = Admin.create(ap)) {
            // ListOffsets v7 max timestamp (KIP-734).
            TopicPartition tp = new TopicPartition(topic, 0);
            var info = admin.listOffsets(Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.maxTimestamp()))
                    .partitionResult(tp).get(30, TimeUnit.SECONDS);
            if (info.offset() != RECORDS - 1 || info.timestamp() != BASE_TS + RECORDS - 1) {
                errors.add("ListOffsets max timestamp on " + tp + " = offset " + info.offset() + " ts " + info.timestamp()
                        + ", want offset " + (RECORDS - 1) + " ts " + (BASE_TS + RECORDS - 1));
            }

            // CreateTopics rejections, with Kafka's error per topic.
            Map<String, Class<?>> bad = new java.util.LinkedHashMap<>();
            bad.put("bad topic name!", org.apache.kafka.common.errors.InvalidTopicException.class);
            bad.put(topic + "-zero-partitions", org.apache.kafka.common.errors.InvalidPartitionsException.class);
            bad.put(topic + "-rf3", org.apache.kafka.common.errors.InvalidReplicationFactorException.class);
            List<NewTopic> news = List.of(
                    new NewTopic("bad topic name!", 1, (short) 1),
                    new NewTopic(topic + "-zero-partitions", 0, (short) 1),
                    new NewTopic(topic + "-rf3", 1, (short) 3));
            var res = admin.createTopics(news).values();
            for (var e : bad.entrySet()) {
                try {
                    res.get(e.getKey()).get(30, TimeUnit.SECONDS);
                    errors.add("CreateTopics " + e.getKey() + " succeeded, want " + e.getValue().getSimpleName());
                } catch (java.util.concurrent.ExecutionException ex) {
                    if (!e.getValue().isInstance(ex.getCause())) {
                        errors.add("CreateTopics " + e.getKey() + ": " + ex.getCause() + ", want " + e.getValue().getSimpleName());
                    }
                }
            }
        }

        // Automatic topic creation (auto.create.topics.enable defaults to true),
        // acks=1 and acks=0, and a record larger than max.message.bytes.
        String auto = topic + "-auto";
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        pp.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        pp.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4 << 20);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        for (String acks : new String[] {"1", "0"}) {
            pp.put(ProducerConfig.ACKS_CONFIG, acks);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 10; i++) {
                    RecordMetadata md = producer.send(new ProducerRecord<>(auto, 0, null, new byte[] {(byte) i}))
                            .get(30, TimeUnit.SECONDS);
                    long want = acks.equals("0") ? -1 : i;
                    if (md.offset() != want) {
                        errors.add("produce acks=" + acks + " to auto-created " + auto + ": offset " + md.offset() + ", want " + want);
                        break;
                    }
                }
            } catch (Exception e) {
                errors.add("produce acks=" + acks + " to auto-created " + auto + ": " + e);
            }
        }
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            var parts = producer.partitionsFor(auto);
            if (parts.size() != 1) {
                errors.add("auto-created " + auto + " has " + parts.size() + " partitions, want num.partitions=1");
            }
            producer.send(new ProducerRecord<>(auto, 0, null, new byte[2 << 20])).get(30, TimeUnit.SECONDS);
            errors.add("produce of a 2 MiB record succeeded, want MESSAGE_TOO_LARGE (max.message.bytes 1048588)");
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof org.apache.kafka.common.errors.RecordTooLargeException)) {
                errors.add("produce of a 2 MiB record: " + e.getCause() + ", want RecordTooLargeException");
            }
        }
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(cp, "earliest"))) {
            TopicPartition tp = new TopicPartition(auto, 0);
            long end = c.endOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp);
            if (end != 20) {
                errors.add("high watermark of " + tp + " after 10 acks=1 + 10 acks=0 records = " + end + ", want 20");
            }
        }
        try (Admin admin = Admin.create(ap)) {
            admin.deleteTopics(List.of(auto)).all().get(30, TimeUnit.SECONDS);
        }
        System.out.println("java: edge checks done");
    }

    /** CreateTopics on an existing name, then DeleteTopics and its effect on Metadata. */
    static void adminChecks(Properties ap, String topic, List<String> errors) throws Exception {
        try (Admin admin = Admin.create(ap)) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
                errors.add("CreateTopics of existing " + topic + " succeeded, want TOPIC_ALREADY_EXISTS");
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException)) {
                    errors.add("CreateTopics of existing " + topic + ": " + e.getCause() + ", want TOPIC_ALREADY_EXISTS");
                }
            }
            admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
            // Deletion may take a moment to show in Metadata; bounded wait.
            boolean gone = false;
            for (int i = 0; i < 50 && !gone; i++) {
                gone = !admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic);
                if (!gone) {
                    Thread.sleep(200);
                }
            }
            if (!gone) {
                errors.add("topic " + topic + " still listed by Metadata 10 s after DeleteTopics");
            } else {
                System.out.println("java: deleted topic " + topic);
            }
        }
    }

    static String compare(Rec want, ConsumerRecord<byte[], byte[]> got, int i) {
        if (got.offset() != i) {
            return "record " + i + " has offset " + got.offset();
        }
        if (!Arrays.equals(want.key(), got.key())) {
            return "record " + i + " key differs";
        }
        if (!Arrays.equals(want.value(), got.value())) {
            return "record " + i + " value differs (want " + len(want.value()) + " bytes, got " + len(got.value()) + ")";
        }
        if (got.timestampType() != org.apache.kafka.common.record.TimestampType.CREATE_TIME) {
            return "record " + i + " timestamp type " + got.timestampType();
        }
        if (got.timestamp() != want.ts()) {
            return "record " + i + " timestamp " + got.timestamp() + ", want " + want.ts();
        }
        Header[] gh = got.headers().toArray();
        if (gh.length != want.headers().size()) {
            return "record " + i + " has " + gh.length + " headers, want " + want.headers().size();
        }
        for (int j = 0; j < gh.length; j++) {
            Header w = want.headers().get(j);
            if (!w.key().equals(gh[j].key()) || !Arrays.equals(w.value(), gh[j].value())) {
                return "record " + i + " header " + j + " differs";
            }
        }
        return null;
    }

    static String len(byte[] b) {
        return b == null ? "null" : Integer.toString(b.length);
    }
}
