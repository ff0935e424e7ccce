package dev.kcompatd.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client over SASL_SSL with SCRAM-SHA-512: create a topic, produce
 * the deterministic records, read them back with an assigned consumer and
 * compare; then a wrong password must fail with SaslAuthenticationException.
 *
 * Usage: SaslChecks SASL_SSL_BOOTSTRAP TOPIC CA_PEM USER PASSWORD. Exit 0 on success.
 */
public final class SaslChecks {
    static final int RECORDS = 200;

    static Properties security(String bootstrap, String ca, String user, String pass) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        p.put("sasl.mechanism", "SCRAM-SHA-512");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + pass + "\";");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", ca);
        return p;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], ca = args[2], user = args[3], pass = args[4];
        List<String> errors = new ArrayList<>();

        Properties ap = security(bootstrap, ca, user, pass);
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        System.out.println("java-sasl: created topic " + topic + " over SASL_SSL with SCRAM-SHA-512");

        Properties pp = security(bootstrap, ca, user, pass);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 45000);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < RECORDS; i++) {
                Main.Rec r = Main.gen(i);
                producer.send(new ProducerRecord<>(topic, 0, r.ts(), r.key(), r.value(), r.headers()));
            }
            producer.flush();
        }
        System.out.println("java-sasl: produced " + RECORDS + " records");

        Properties cp = security(bootstrap, ca, user, pass);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        int got = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (got < RECORDS && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(500))) {
                    Main.Rec want = Main.gen(got);
                    if (rec.offset() != got || !Arrays.equals(rec.key(), want.key()) || !Arrays.equals(rec.value(), want.value())) {
                        errors.add("record " + got + " differs (offset " + rec.offset() + ")");
                    }
                    got++;
                }
            }
        }
        if (got != RECORDS) {
            errors.add("consumed " + got + " of " + RECORDS + " records");
        }
        System.out.println("java-sasl: consumed " + got + " records");

        Properties bad = security(bootstrap, ca, user, pass + "-wrong");
        bad.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        bad.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        try (Admin admin = Admin.create(bad)) {
            admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
            errors.add("a wrong password was accepted");
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof SaslAuthenticationException)) {
                errors.add("a wrong password failed with " + e.getCause() + ", want SaslAuthenticationException");
            } else {
                System.out.println("java-sasl: wrong password: " + e.getCause().getMessage());
            }
        }

        for (String e : errors) {
            System.out.println("java-sasl: FAIL " + e);
        }
        System.exit(errors.isEmpty() ? 0 : 1);
    }
}
