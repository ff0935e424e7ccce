package dev.kcompatd.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The next slice, as applications use the Java client by default: an
 * idempotent producer, a consumer group that subscribes and commits, a
 * second member resuming from the committed offsets, and transactions
 * read with read_committed.
 */
final class Next {
    static final int PARTITIONS = 3;
    static final int RECORDS = Main.RECORDS;

    private Next() {}

    static Properties producerProps(String bootstrap) {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return pp;
    }

    static Properties consumerProps(String bootstrap, String group, String isolation) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        cp.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        cp.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return cp;
    }

    static Throwable rootCause(Throwable e) {
        while (e.getCause() != null && e.getCause() != e) {
            e = e.getCause();
        }
        return e;
    }

    static void produce(Properties pp, String topic, List<String> errors) throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < RECORDS; i++) {
                Main.Rec r = Main.gen(i);
                futures.add(producer.send(new ProducerRecord<>(topic, i % PARTITIONS, r.ts(), r.key(), r.value(), r.headers())));
            }
            producer.flush();
        }
        for (int i = 0; i < RECORDS; i++) {
            RecordMetadata md = futures.get(i).get(30, TimeUnit.SECONDS);
            if (md.partition() != i % PARTITIONS || md.offset() != i / PARTITIONS) {
                errors.add("produce record " + i + " at " + md.partition() + "/" + md.offset());
                break;
            }
        }
    }

    static void run(String bootstrap, String topic, List<String> errors) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        String txTopic = topic + "-tx";
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1), new NewTopic(txTopic, 1, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
        }
        System.out.println("java-next: created topics " + topic + ", " + txTopic);

        // Idempotent producer: InitProducerId, then sequenced batches, 5 in
        // flight. If that fails, produce without idempotence (one request in
        // flight) so that the group checks below still run.
        try {
            produce(producerProps(bootstrap), topic, errors);
            System.out.println("java-next: produced " + RECORDS + " records idempotently");
        } catch (Exception e) {
            errors.add("idempotent produce: " + rootCause(e));
            Properties pp = producerProps(bootstrap);
            pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
            pp.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
            try (Admin admin = Admin.create(ap)) {
                // Start again on an empty topic: the failed attempt may have left records.
                admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
                for (int i = 0; i < 50; i++) {
                    try {
                        admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);
                        break;
                    } catch (java.util.concurrent.ExecutionException te) {
                        if (!(te.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException)) {
                            throw te;
                        }
                        Thread.sleep(200);
                    }
                }
            }
            produce(pp, topic, errors);
            System.out.println("java-next: produced " + RECORDS + " records without idempotence (fallback)");
        }

        String group = topic + "-group";
        try {
            groups(bootstrap, topic, group, errors);
        } catch (Exception e) {
            errors.add("consumer group: " + rootCause(e));
        }

        try {
            transactions(bootstrap, txTopic, group, errors);
            System.out.println("java-next: transactions checked");
        } catch (Exception e) {
            errors.add("transactions: " + rootCause(e));
        }

        String hangTopic = topic + "-hang";
        try {
            hangingTransaction(ap, bootstrap, hangTopic, errors);
            System.out.println("java-next: hanging transaction aborted by Admin.abortTransaction");
        } catch (Exception e) {
            errors.add("abortTransaction: " + rootCause(e));
        }

        try (Admin admin = Admin.create(ap)) {
            admin.deleteTopics(List.of(topic, txTopic, hangTopic)).all().get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * kafka-transactions.sh abort (KIP-664): a transaction its producer
     * leaves open holds the LSO; describeProducers finds it and
     * abortTransaction (WriteTxnMarkers) ends it, so the LSO reaches the
     * end and read_committed skips its records. listConfigResources
     * (KIP-1142) lists the topic.
     */
    static void hangingTransaction(Properties ap, String bootstrap, String hangTopic, List<String> errors) throws Exception {
        TopicPartition tp = new TopicPartition(hangTopic, 0);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(hangTopic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            Properties pp = producerProps(bootstrap);
            pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, hangTopic + "-id");
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
                producer.initTransactions();
                producer.beginTransaction();
                for (int i = 0; i < 3; i++) {
                    producer.send(new ProducerRecord<>(hangTopic, 0, null, ("hanging-" + i).getBytes()));
                }
                producer.flush();
                long lso = lastStable(admin, tp);
                if (lso != 0) {
                    errors.add("LSO " + lso + " with the transaction open, want 0");
                }
                org.apache.kafka.clients.admin.ProducerState open = null;
                for (org.apache.kafka.clients.admin.ProducerState st : admin.describeProducers(List.of(tp)).partitionResult(tp)
                        .get(30, TimeUnit.SECONDS).activeProducers()) {
                    if (st.currentTransactionStartOffset().orElse(-1) == 0) {
                        open = st;
                    }
                }
                if (open == null) {
                    errors.add("describeProducers found no transaction at offset 0");
                    return;
                }
                admin.abortTransaction(new org.apache.kafka.clients.admin.AbortTransactionSpec(tp, open.producerId(),
                    (short) open.producerEpoch(), open.coordinatorEpoch().orElse(0))).all().get(30, TimeUnit.SECONDS);
                // 3 records + the abort marker.
                if ((lso = lastStable(admin, tp)) != 4) {
                    errors.add("LSO " + lso + " after abortTransaction, want 4");
                }
            }
            Set<String> topics = new HashSet<>();
            for (org.apache.kafka.common.config.ConfigResource r : admin.listConfigResources(
                    Set.of(org.apache.kafka.common.config.ConfigResource.Type.TOPIC),
                    new org.apache.kafka.clients.admin.ListConfigResourcesOptions()).all().get(30, TimeUnit.SECONDS)) {
                topics.add(r.name());
            }
            if (!topics.contains(hangTopic)) {
                errors.add("listConfigResources(TOPIC) lacks " + hangTopic + ": " + topics);
            }
        }
    }

    static long lastStable(Admin admin, TopicPartition tp) throws Exception {
        return admin.listOffsets(Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.latest()),
            new org.apache.kafka.clients.admin.ListOffsetsOptions(org.apache.kafka.common.IsolationLevel.READ_COMMITTED))
            .all().get(30, TimeUnit.SECONDS).get(tp).offset();
    }

    /** A member subscribes, reads everything and commits; a second one resumes there. */
    static void groups(String bootstrap, String topic, String group, List<String> errors) throws Exception {
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(bootstrap, group, "read_uncommitted"))) {
            c.subscribe(List.of(topic));
            int total = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (total < RECORDS && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
                    total++;
                }
            }
            c.commitSync(Duration.ofSeconds(30));
            System.out.println("java-next: group member consumed " + total + " records and committed");
        }
        for (int p = 0; p < PARTITIONS; p++) {
            List<ConsumerRecord<byte[], byte[]>> recs = got.getOrDefault(p, List.of());
            int want = (RECORDS - p + PARTITIONS - 1) / PARTITIONS;
            if (recs.size() != want) {
                errors.add("group consume partition " + p + ": " + recs.size() + " records, want " + want);
            }
            for (int pos = 0; pos < recs.size(); pos++) {
                String diff = Main.compare(Main.gen(p + pos * PARTITIONS), recs.get(pos), pos);
                if (diff != null) {
                    errors.add("group consume partition " + p + ": " + diff);
                    break;
                }
            }
        }

        // A new member of the same group resumes at the committed offsets.
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(bootstrap, group, "read_uncommitted"))) {
            Set<TopicPartition> tps = new HashSet<>();
            for (int p = 0; p < PARTITIONS; p++) {
                tps.add(new TopicPartition(topic, p));
            }
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(tps, Duration.ofSeconds(30));
            for (TopicPartition tp : tps) {
                long want = (RECORDS - tp.partition() + PARTITIONS - 1) / PARTITIONS;
                OffsetAndMetadata om = committed.get(tp);
                if (om == null || om.offset() != want) {
                    errors.add("OffsetFetch " + tp + " = " + om + ", want " + want);
                }
            }
            c.subscribe(List.of(topic));
            int extra = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (System.nanoTime() < deadline) {
                extra += c.poll(Duration.ofMillis(500)).count();
            }
            if (extra != 0) {
                errors.add("second group member re-read " + extra + " records past the committed offsets");
            }
        }
    }

    /**
     * One committed and one aborted transaction; read_committed sees the
     * first only. The committed one also sends a group's offsets to the
     * transaction. Under the finalized transaction.version (2 by default in
     * Kafka 4.3: KIP-890 part 2) the client adds partitions through Produce
     * and TxnOffsetCommit and every commit or abort bumps the producer
     * epoch (seen with describeTransactions); under 1 the epoch stays.
     */
    static void transactions(String bootstrap, String txTopic, String group, List<String> errors) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        String txnID = txTopic + "-id";
        String offsetsGroup = group + "-txo";
        try (Admin admin = Admin.create(ap)) {
            org.apache.kafka.clients.admin.FinalizedVersionRange tvRange = admin.describeFeatures().featureMetadata()
                .get(30, TimeUnit.SECONDS).finalizedFeatures().get("transaction.version");
            int tv = tvRange == null ? 0 : tvRange.maxVersionLevel();
            System.out.println("java-next: transaction.version " + tv + " finalized");
            Properties tp = producerProps(bootstrap);
            tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnID);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(tp)) {
                producer.initTransactions();
                int epoch0 = admin.describeTransactions(List.of(txnID)).description(txnID).get(30, TimeUnit.SECONDS).producerEpoch();
                producer.beginTransaction();
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(txTopic, 0, null, ("committed-" + i).getBytes()));
                }
                producer.sendOffsetsToTransaction(Map.of(new TopicPartition(txTopic, 0), new OffsetAndMetadata(7)),
                    new org.apache.kafka.clients.consumer.ConsumerGroupMetadata(offsetsGroup));
                producer.commitTransaction();
                producer.beginTransaction();
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(txTopic, 0, null, ("aborted-" + i).getBytes()));
                }
                producer.flush();
                producer.abortTransaction();
                int epoch2 = admin.describeTransactions(List.of(txnID)).description(txnID).get(30, TimeUnit.SECONDS).producerEpoch();
                int wantBump = tv >= 2 ? 2 : 0;
                if (epoch2 - epoch0 != wantBump) {
                    errors.add("producer epoch " + epoch0 + " -> " + epoch2 + " over a commit and an abort under transaction.version "
                        + tv + ", want +" + wantBump);
                }
            }
            OffsetAndMetadata om = admin.listConsumerGroupOffsets(offsetsGroup).partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS).get(new TopicPartition(txTopic, 0));
            if (om == null || om.offset() != 7) {
                errors.add("offsets sent to the committed transaction: " + om + ", want offset 7");
            }
        }
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(bootstrap, group + "-tx", "read_committed"))) {
            c.subscribe(List.of(txTopic));
            List<String> seen = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (System.nanoTime() < deadline && seen.size() < 10) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    seen.add(new String(r.value()));
                }
            }
            // Give an aborted record the chance to show up wrongly.
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofSeconds(1))) {
                seen.add(new String(r.value()));
            }
            List<String> want = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                want.add("committed-" + i);
            }
            if (!seen.equals(want)) {
                errors.add("read_committed saw " + seen + ", want " + want);
            }
            TopicPartition p0 = new TopicPartition(txTopic, 0);
            // 10 + commit marker + 10 + abort marker.
            long end = c.endOffsets(List.of(p0), Duration.ofSeconds(30)).get(p0);
            if (end != 22) {
                errors.add("LSO/end offset of " + p0 + " after both transactions = " + end + ", want 22");
            }
        }
    }
}
