package dev.kcompatd.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.errors.LogDirNotFoundException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java AdminClient (kafka-clients) against a broker: create, describe,
 * alter and delete, asserting what Apache Kafka answers (checked with
 * COMPAT_AGAINST=kafka). Each step runs on its own so one failure does not
 * hide the others.
 *
 * Usage: AdminChecks BOOTSTRAP TOPIC. Exit 0 on success, 1 on any mismatch.
 *
 * Kafka 4 removed the legacy Admin.alterConfigs (AlterConfigs, key 33) from
 * the Java client; confluent-admin (librdkafka) drives that API instead.
 */
public final class AdminChecks {
    static final String NAME = "java-admin";
    static final long TIMEOUT_S = 30;
    // The produce step's first record timestamp: a minute ago, whole
    // seconds. The topic's retention.ms is set to an hour above, so records
    // stamped years back would be deleted by the broker's next retention
    // check, which may fall between the produce and the steps reading them.
    static final long BASE_TS = (System.currentTimeMillis() / 1000 - 60) * 1000;
    static final List<String> errors = new ArrayList<>();

    /** Kafka 4.3's topic configs, as its DescribeConfigs lists them. */
    static final String[] TOPIC_CONFIGS = {
        "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
        "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
        "follower.replication.throttled.replicas", "index.interval.bytes",
        "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
        "max.compaction.lag.ms", "max.message.bytes", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
        "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
        "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
        "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
    };

    interface Step {
        void run() throws Exception;
    }

    static void step(String name, Step s) {
        try {
            s.run();
            System.out.println(NAME + ": " + name + " done");
        } catch (Exception e) {
            Throwable c = e instanceof ExecutionException ? e.getCause() : e;
            errors.add(name + ": aborted: " + c);
        }
    }

    static void want(boolean ok, String what) {
        if (!ok) {
            errors.add(what);
        }
    }

    static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    /** Fails unless f fails with an exception of class want. */
    static void wantError(String what, KafkaFuture<?> f, Class<? extends Throwable> want) {
        try {
            f.get(TIMEOUT_S, TimeUnit.SECONDS);
            errors.add(what + ": succeeded, want " + want.getSimpleName());
        } catch (ExecutionException e) {
            if (want.isInstance(e.getCause())) {
                System.out.println(NAME + ": " + what + ": " + want.getSimpleName() + ": " + e.getCause().getMessage());
            } else {
                errors.add(what + ": got " + e.getCause() + ", want " + want.getSimpleName());
            }
        } catch (Exception e) {
            errors.add(what + ": got " + e + ", want " + want.getSimpleName());
        }
    }

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: AdminChecks BOOTSTRAP TOPIC");
            System.exit(2);
        }
        try {
            run(args[0], args[1]);
        } catch (Exception e) {
            e.printStackTrace();
            errors.add("aborted: " + e);
        }
        if (errors.isEmpty()) {
            System.out.println(NAME + ": OK");
            System.exit(0);
        }
        for (String e : errors) {
            System.out.println(NAME + ": FAIL " + e);
        }
        System.exit(1);
    }

    static Map<String, ConfigEntry> describe(Admin admin, ConfigResource r) throws Exception {
        Config c = get(admin.describeConfigs(List.of(r),
                new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true)).all()).get(r);
        Map<String, ConfigEntry> m = new HashMap<>();
        for (ConfigEntry e : c.entries()) {
            m.put(e.name(), e);
        }
        return m;
    }

    /**
     * Describes r until entry name satisfies ok (Kafka applies broker and
     * topic config changes to its metadata image asynchronously), at most 10 s.
     */
    static ConfigEntry awaitEntry(Admin admin, ConfigResource r, String name, Predicate<ConfigEntry> ok)
            throws Exception {
        ConfigEntry e = null;
        for (int i = 0; i < 50; i++) {
            e = describe(admin, r).get(name);
            if (e != null && ok.test(e)) {
                return e;
            }
            Thread.sleep(200);
        }
        return e;
    }

    static String show(ConfigEntry e) {
        if (e == null) {
            return "missing";
        }
        StringBuilder sb = new StringBuilder();
        sb.append(e.name()).append('=').append(e.value()).append(" source=").append(e.source())
                .append(" type=").append(e.type()).append(" readOnly=").append(e.isReadOnly())
                .append(" sensitive=").append(e.isSensitive()).append(" synonyms=[");
        for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
            sb.append(s.source()).append(':').append(s.name()).append('=').append(s.value()).append(' ');
        }
        return sb.append(']').toString();
    }

    /** Checks value, source and the synonym chain ("SOURCE:name=value" each). */
    static void wantEntry(String what, ConfigEntry e, String value, ConfigEntry.ConfigSource source,
            String... synonyms) {
        if (e == null) {
            errors.add(what + ": entry missing");
            return;
        }
        List<String> got = new ArrayList<>();
        for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
            got.add(s.source() + ":" + s.name() + "=" + s.value());
        }
        if (!java.util.Objects.equals(e.value(), value) || e.source() != source
                || !got.equals(List.of(synonyms))) {
            errors.add(what + ": got " + show(e) + "; want " + e.name() + "=" + value + " source=" + source
                    + " synonyms=" + List.of(synonyms));
        }
    }

    static final ConfigEntry.ConfigSource TOPIC = ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG;
    static final ConfigEntry.ConfigSource DEFAULT = ConfigEntry.ConfigSource.DEFAULT_CONFIG;
    static final ConfigEntry.ConfigSource DYN_DEFAULT = ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG;

    static AlterConfigOp op(String name, String value, AlterConfigOp.OpType t) {
        return new AlterConfigOp(new ConfigEntry(name, value), t);
    }

    static KafkaFuture<Void> alter(Admin admin, ConfigResource r, boolean validateOnly, AlterConfigOp... ops) {
        return admin.incrementalAlterConfigs(Map.of(r, List.of(ops)),
                new AlterConfigsOptions().validateOnly(validateOnly)).all();
    }

    static void run(String bootstrap, String topic) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        String byId = topic + "-byid";
        String port = bootstrap.substring(bootstrap.lastIndexOf(':') + 1);
        try (Admin admin = Admin.create(ap)) {
            // --- DescribeCluster -------------------------------------------------
            DescribeClusterResult dc = admin.describeCluster();
            Collection<Node> nodes = get(dc.nodes());
            Node controller = get(dc.controller());
            String clusterId = get(dc.clusterId());
            want(nodes.size() == 1, "describeCluster: " + nodes.size() + " nodes, want 1: " + nodes);
            Node node = nodes.iterator().next();
            int nodeId = node.id();
            want(controller != null && controller.id() == nodeId,
                    "describeCluster: controller " + controller + ", want node " + nodeId);
            want(clusterId != null && !clusterId.isEmpty(), "describeCluster: cluster id '" + clusterId + "'");
            want(node.host().equals("127.0.0.1") && String.valueOf(node.port()).equals(port),
                    "describeCluster: node " + node + ", want 127.0.0.1:" + port);
            System.out.println(NAME + ": cluster " + clusterId + ", node " + node);

            ConfigResource topicRes = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            ConfigResource brokerRes = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(nodeId));
            ConfigResource clusterRes = new ConfigResource(ConfigResource.Type.BROKER, "");
            Uuid[] topicId = new Uuid[1];
            Uuid[] byIdId = new Uuid[1];

            // --- CreateTopics ------------------------------------------------------
            step("createTopics", () -> {
                NewTopic nt = new NewTopic(topic, 3, (short) 1).configs(Map.of(
                        "cleanup.policy", "compact",
                        "retention.ms", "3600000",
                        "max.message.bytes", "2097152"));
                CreateTopicsResult r = admin.createTopics(List.of(nt, new NewTopic(byId, 1, (short) 1)));
                get(r.all());
                topicId[0] = get(r.topicId(topic));
                byIdId[0] = get(r.topicId(byId));
                want(topicId[0] != null && !topicId[0].equals(Uuid.ZERO_UUID), "createTopics: topic id " + topicId[0]);
                want(get(r.numPartitions(topic)) == 3, "createTopics: numPartitions " + get(r.numPartitions(topic)));
                want(get(r.replicationFactor(topic)) == 1,
                        "createTopics: replicationFactor " + get(r.replicationFactor(topic)));
                Config c = get(r.config(topic));
                ConfigEntry cp = c.get("cleanup.policy");
                want(cp != null && "compact".equals(cp.value()) && cp.source() == TOPIC,
                        "createTopics: returned config " + show(cp) + ", want compact from DYNAMIC_TOPIC_CONFIG");
                ConfigEntry si = c.get("segment.index.bytes");
                want(si != null && "10485760".equals(si.value()) && si.source() == DEFAULT,
                        "createTopics: returned config " + show(si) + ", want 10485760 from DEFAULT_CONFIG");

                wantError("createTopics existing", admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all(),
                        TopicExistsException.class);
                wantError("createTopics cleanup.policy=bogus", admin.createTopics(List.of(
                        new NewTopic(topic + "-bad", 1, (short) 1).configs(Map.of("cleanup.policy", "bogus")))).all(),
                        InvalidConfigurationException.class);
                wantError("createTopics unknown config", admin.createTopics(List.of(
                        new NewTopic(topic + "-bad", 1, (short) 1).configs(Map.of("no.such.config", "1")))).all(),
                        InvalidConfigurationException.class);
                get(admin.createTopics(List.of(new NewTopic(topic + "-validate", 2, (short) 1)),
                        new CreateTopicsOptions().validateOnly(true)).all());
                Set<String> names = get(admin.listTopics().names());
                want(!names.contains(topic + "-validate"), "createTopics validateOnly created the topic");
                want(!names.contains(topic + "-bad"), "a failed createTopics created the topic");
            });

            // --- DescribeTopics (DescribeTopicPartitions, Metadata by id) -----------
            step("describeTopics", () -> {
                TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
                want(d.topicId().equals(topicId[0]), "describeTopics: id " + d.topicId() + ", want " + topicId[0]);
                want(!d.isInternal(), "describeTopics: internal");
                want(d.partitions().size() == 3, "describeTopics: " + d.partitions().size() + " partitions");
                for (int i = 0; i < d.partitions().size(); i++) {
                    TopicPartitionInfo p = d.partitions().get(i);
                    want(p.partition() == i && p.leader() != null && p.leader().id() == nodeId
                            && p.replicas().size() == 1 && p.replicas().get(0).id() == nodeId
                            && p.isr().size() == 1 && p.isr().get(0).id() == nodeId,
                            "describeTopics: partition " + i + ": " + p);
                }
                TopicDescription d2 = get(admin.describeTopics(TopicCollection.ofTopicIds(List.of(topicId[0])))
                        .allTopicIds()).get(topicId[0]);
                want(d2 != null && d2.name().equals(topic) && d2.partitions().size() == 3,
                        "describeTopics by id: " + d2);
                wantError("describeTopics unknown", admin.describeTopics(List.of(topic + "-nope")).allTopicNames(),
                        UnknownTopicOrPartitionException.class);
                wantError("describeTopics unknown id",
                        admin.describeTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).allTopicIds(),
                        UnknownTopicIdException.class);
            });

            // --- DescribeConfigs ---------------------------------------------------
            step("describeConfigs topic", () -> {
                Map<String, ConfigEntry> m = describe(admin, topicRes);
                Set<String> missing = new TreeSet<>(List.of(TOPIC_CONFIGS));
                missing.removeAll(m.keySet());
                want(missing.isEmpty(), "describeConfigs topic: missing configs " + missing);
                Set<String> extra = new TreeSet<>(m.keySet());
                extra.removeAll(List.of(TOPIC_CONFIGS));
                System.out.println(NAME + ": topic configs beyond the checked ones: " + extra);
                wantEntry("describeConfigs cleanup.policy", m.get("cleanup.policy"), "compact", TOPIC,
                        "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete");
                wantEntry("describeConfigs retention.ms", m.get("retention.ms"), "3600000", TOPIC,
                        "DYNAMIC_TOPIC_CONFIG:retention.ms=3600000");
                wantEntry("describeConfigs max.message.bytes", m.get("max.message.bytes"), "2097152", TOPIC,
                        "DYNAMIC_TOPIC_CONFIG:max.message.bytes=2097152",
                        "DEFAULT_CONFIG:message.max.bytes=1048588");
                // (Not min.insync.replicas: Kafka 4's storage format sets it as
                // a cluster-wide dynamic default, for eligible leader replicas.)
                wantEntry("describeConfigs segment.index.bytes", m.get("segment.index.bytes"), "10485760", DEFAULT,
                        "DEFAULT_CONFIG:log.index.size.max.bytes=10485760");
                wantEntry("describeConfigs message.timestamp.type", m.get("message.timestamp.type"), "CreateTime",
                        DEFAULT, "DEFAULT_CONFIG:log.message.timestamp.type=CreateTime");
                Map<String, ConfigEntry.ConfigType> types = Map.of(
                        "cleanup.policy", ConfigEntry.ConfigType.LIST,
                        "retention.ms", ConfigEntry.ConfigType.LONG,
                        "segment.bytes", ConfigEntry.ConfigType.INT,
                        "min.cleanable.dirty.ratio", ConfigEntry.ConfigType.DOUBLE,
                        "preallocate", ConfigEntry.ConfigType.BOOLEAN,
                        "compression.type", ConfigEntry.ConfigType.STRING);
                for (Map.Entry<String, ConfigEntry.ConfigType> t : types.entrySet()) {
                    ConfigEntry e = m.get(t.getKey());
                    want(e != null && e.type() == t.getValue(),
                            "describeConfigs " + t.getKey() + ": type " + (e == null ? null : e.type()) + ", want "
                                    + t.getValue());
                }
                for (ConfigEntry e : m.values()) {
                    if (List.of(TOPIC_CONFIGS).contains(e.name())) {
                        want(e.documentation() != null && !e.documentation().isEmpty(),
                                "describeConfigs " + e.name() + ": no documentation");
                        want(!e.isReadOnly() && !e.isSensitive(),
                                "describeConfigs " + e.name() + ": readOnly/sensitive: " + show(e));
                    }
                }
                wantError("describeConfigs unknown topic",
                        admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, topic + "-nope")))
                                .all(), UnknownTopicOrPartitionException.class);
            });

            step("describeConfigs broker", () -> {
                Map<String, ConfigEntry> m = describe(admin, brokerRes);
                wantEntry("describeConfigs broker log.cleanup.policy", m.get("log.cleanup.policy"), "delete", DEFAULT,
                        "DEFAULT_CONFIG:log.cleanup.policy=delete");
                ConfigEntry lcp = m.get("log.cleanup.policy");
                want(lcp != null && lcp.type() == ConfigEntry.ConfigType.LIST && lcp.documentation() != null
                        && !lcp.documentation().isEmpty() && !lcp.isReadOnly(),
                        "describeConfigs broker log.cleanup.policy: " + show(lcp) + " doc " +
                                (lcp == null ? null : lcp.documentation()));
                // The topic's segment.bytes follows the broker's log.segment.bytes.
                ConfigEntry lsb = m.get("log.segment.bytes");
                ConfigEntry sb = describe(admin, topicRes).get("segment.bytes");
                want(lsb != null && sb != null && lsb.value().equals(sb.value()),
                        "describeConfigs: topic " + show(sb) + " but broker " + show(lsb));
                Map<String, ConfigEntry> d = describe(admin, clusterRes);
                want(!d.containsKey("log.retention.bytes") && !d.containsKey("log.cleanup.policy"),
                        "describeConfigs cluster default: " + d.keySet() + ", want neither log.retention.bytes nor "
                                + "log.cleanup.policy set");
            });

            // --- IncrementalAlterConfigs ------------------------------------------
            step("incrementalAlterConfigs topic", () -> {
                AlterConfigOp.OpType SET = AlterConfigOp.OpType.SET, DEL = AlterConfigOp.OpType.DELETE,
                        APPEND = AlterConfigOp.OpType.APPEND, SUB = AlterConfigOp.OpType.SUBTRACT;
                get(alter(admin, topicRes, false, op("cleanup.policy", "delete", APPEND)));
                wantEntry("APPEND cleanup.policy delete", awaitEntry(admin, topicRes, "cleanup.policy",
                        e -> "compact,delete".equals(e.value())), "compact,delete", TOPIC,
                        "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete",
                        "DEFAULT_CONFIG:log.cleanup.policy=delete");
                get(alter(admin, topicRes, false, op("cleanup.policy", "compact", SUB)));
                wantEntry("SUBTRACT cleanup.policy compact", awaitEntry(admin, topicRes, "cleanup.policy",
                        e -> "delete".equals(e.value())), "delete", TOPIC,
                        "DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete", "DEFAULT_CONFIG:log.cleanup.policy=delete");
                get(alter(admin, topicRes, false, op("cleanup.policy", "compact", SET)));
                wantEntry("SET cleanup.policy compact", awaitEntry(admin, topicRes, "cleanup.policy",
                        e -> "compact".equals(e.value())), "compact", TOPIC,
                        "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete");
                get(alter(admin, topicRes, false, op("cleanup.policy", null, DEL)));
                wantEntry("DELETE cleanup.policy", awaitEntry(admin, topicRes, "cleanup.policy",
                        e -> e.source() == DEFAULT), "delete", DEFAULT, "DEFAULT_CONFIG:log.cleanup.policy=delete");
                // APPEND to a config that is not set starts from Kafka's default.
                get(alter(admin, topicRes, false, op("cleanup.policy", "compact", APPEND)));
                wantEntry("APPEND cleanup.policy compact to the default", awaitEntry(admin, topicRes,
                        "cleanup.policy", e -> e.source() == TOPIC), "delete,compact", TOPIC,
                        "DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact",
                        "DEFAULT_CONFIG:log.cleanup.policy=delete");
                get(alter(admin, topicRes, true, op("cleanup.policy", "compact", SET)));
                Thread.sleep(500);
                ConfigEntry e = describe(admin, topicRes).get("cleanup.policy");
                want(e != null && "delete,compact".equals(e.value()), "validateOnly SET changed it: " + show(e));

                wantError("SET cleanup.policy=bogus", alter(admin, topicRes, false,
                        op("cleanup.policy", "bogus", SET)), InvalidConfigurationException.class);
                wantError("SET retention.ms=abc", alter(admin, topicRes, false,
                        op("retention.ms", "abc", SET)), InvalidConfigurationException.class);
                wantError("APPEND retention.ms", alter(admin, topicRes, false,
                        op("retention.ms", "5", APPEND)), InvalidConfigurationException.class);
                wantError("SET no.such.config", alter(admin, topicRes, false,
                        op("no.such.config", "1", SET)), InvalidConfigurationException.class);
                wantError("SET on an unknown topic", alter(admin,
                        new ConfigResource(ConfigResource.Type.TOPIC, topic + "-nope"), false,
                        op("retention.ms", "5", SET)), UnknownTopicOrPartitionException.class);
                e = describe(admin, topicRes).get("retention.ms");
                want(e != null && "3600000".equals(e.value()), "a failed alter changed retention.ms: " + show(e));
            });

            step("incrementalAlterConfigs broker default", () -> {
                get(alter(admin, clusterRes, false,
                        op("log.retention.bytes", "1073741824", AlterConfigOp.OpType.SET)));
                wantEntry("cluster default log.retention.bytes on the topic", awaitEntry(admin, topicRes,
                        "retention.bytes", e -> "1073741824".equals(e.value()) && e.source() == DYN_DEFAULT), "1073741824", DYN_DEFAULT,
                        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1073741824",
                        "DEFAULT_CONFIG:log.retention.bytes=-1");
                ConfigEntry cd = awaitEntry(admin, clusterRes, "log.retention.bytes", e -> true);
                want(cd != null && "1073741824".equals(cd.value()) && cd.source() == DYN_DEFAULT,
                        "describeConfigs cluster default after SET: " + show(cd));
                ConfigEntry b = awaitEntry(admin, brokerRes, "log.retention.bytes", e -> "1073741824".equals(e.value()));
                wantEntry("cluster default log.retention.bytes on the broker", b, "1073741824", DYN_DEFAULT,
                        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1073741824",
                        "DEFAULT_CONFIG:log.retention.bytes=-1");
                get(alter(admin, clusterRes, false, op("log.retention.bytes", null, AlterConfigOp.OpType.DELETE)));
                wantEntry("cluster default log.retention.bytes deleted", awaitEntry(admin, topicRes,
                        "retention.bytes", e -> "-1".equals(e.value()) && e.source() == DEFAULT), "-1", DEFAULT,
                        "DEFAULT_CONFIG:log.retention.bytes=-1");
                wantError("SET log.dirs dynamically", alter(admin, clusterRes, false,
                        op("log.dirs", "/tmp/x", AlterConfigOp.OpType.SET)), InvalidRequestException.class);
                wantError("SET log.retention.bytes=abc", alter(admin, clusterRes, false,
                        op("log.retention.bytes", "abc", AlterConfigOp.OpType.SET)), InvalidRequestException.class);
            });

            // --- CreatePartitions ---------------------------------------------------
            step("createPartitions", () -> {
                get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
                TopicDescription d = null;
                for (int i = 0; i < 50; i++) {
                    d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
                    if (d.partitions().size() == 5) {
                        break;
                    }
                    Thread.sleep(200);
                }
                want(d.partitions().size() == 5, "createPartitions: " + d.partitions().size() + " partitions, want 5");
                wantError("createPartitions to the same count",
                        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all(),
                        InvalidPartitionsException.class);
                wantError("createPartitions shrink",
                        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all(),
                        InvalidPartitionsException.class);
                wantError("createPartitions unknown topic",
                        admin.createPartitions(Map.of(topic + "-nope", NewPartitions.increaseTo(2))).all(),
                        UnknownTopicOrPartitionException.class);
                wantError("createPartitions assignment to an unknown broker",
                        admin.createPartitions(Map.of(topic,
                                NewPartitions.increaseTo(6, List.of(List.of(nodeId + 99))))).all(),
                        InvalidReplicaAssignmentException.class);
                get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(7, List.of(List.of(nodeId),
                        List.of(nodeId)))), new CreatePartitionsOptions().validateOnly(true)).all());
                Thread.sleep(500);
                d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
                want(d.partitions().size() == 5, "createPartitions validateOnly: " + d.partitions().size()
                        + " partitions, want 5");
            });

            // Records for DescribeLogDirs sizes and ListOffsets.
            step("produce", () -> {
                Properties pp = new Properties();
                pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
                pp.put(ProducerConfig.ACKS_CONFIG, "all");
                pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
                pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
                pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
                pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
                pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
                    for (int i = 0; i < 10; i++) {
                        p.send(new ProducerRecord<>(topic, 0, BASE_TS + i,
                                ("k" + i).getBytes(StandardCharsets.UTF_8),
                                ("value-" + i).getBytes(StandardCharsets.UTF_8))).get(30, TimeUnit.SECONDS);
                    }
                }
            });

            step("listOffsets", () -> {
                TopicPartition tp0 = new TopicPartition(topic, 0);
                TopicPartition tp4 = new TopicPartition(topic, 4);
                var latest = get(admin.listOffsets(Map.of(tp0, OffsetSpec.latest(), tp4, OffsetSpec.latest())).all());
                want(latest.get(tp0).offset() == 10 && latest.get(tp4).offset() == 0,
                        "listOffsets latest: " + latest);
                var earliest = get(admin.listOffsets(Map.of(tp0, OffsetSpec.earliest())).all());
                want(earliest.get(tp0).offset() == 0, "listOffsets earliest: " + earliest);
                var max = get(admin.listOffsets(Map.of(tp0, OffsetSpec.maxTimestamp())).all());
                want(max.get(tp0).offset() == 9 && max.get(tp0).timestamp() == BASE_TS + 9,
                        "listOffsets maxTimestamp: " + max);
            });

            // A seek that carries a leader epoch makes the consumer validate its
            // position with OffsetForLeaderEpoch before it fetches.
            step("offsetForLeaderEpoch", () -> {
                TopicPartition tp0 = new TopicPartition(topic, 0);
                Properties cp = new Properties();
                cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
                cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
                cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                cp.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
                Optional<Integer> epoch = Optional.empty();
                try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
                    c.assign(List.of(tp0));
                    c.seek(tp0, 0);
                    for (int i = 0; i < 20 && epoch.isEmpty(); i++) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                            epoch = r.leaderEpoch();
                            break;
                        }
                    }
                }
                want(epoch.isPresent(), "fetch: no record with a leader epoch");
                if (epoch.isEmpty()) {
                    return;
                }
                try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
                    c.assign(List.of(tp0));
                    c.seek(tp0, new OffsetAndMetadata(5, epoch, ""));
                    long first = -1;
                    for (int i = 0; i < 20 && first < 0; i++) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                            first = r.offset();
                            break;
                        }
                    }
                    want(first == 5, "seek to 5 at leader epoch " + epoch.get() + ": first record at " + first);
                }
            });

            // --- DescribeLogDirs ----------------------------------------------------
            step("describeLogDirs", () -> {
                Map<Integer, Map<String, LogDirDescription>> all =
                        get(admin.describeLogDirs(List.of(nodeId)).allDescriptions());
                Map<String, LogDirDescription> dirs = all.get(nodeId);
                want(dirs != null && dirs.size() == 1, "describeLogDirs: " + all);
                if (dirs == null || dirs.isEmpty()) {
                    return;
                }
                Map.Entry<String, LogDirDescription> dir = dirs.entrySet().iterator().next();
                LogDirDescription ld = dir.getValue();
                want(ld.error() == null, "describeLogDirs: error " + ld.error());
                want(dir.getKey().startsWith("/"), "describeLogDirs: path " + dir.getKey() + " not absolute");
                want(ld.totalBytes().isPresent() && ld.totalBytes().getAsLong() > 0 && ld.usableBytes().isPresent()
                        && ld.usableBytes().getAsLong() <= ld.totalBytes().getAsLong(),
                        "describeLogDirs: total " + ld.totalBytes() + " usable " + ld.usableBytes());
                for (int p = 0; p < 5; p++) {
                    ReplicaInfo ri = ld.replicaInfos().get(new TopicPartition(topic, p));
                    if (ri == null) {
                        errors.add("describeLogDirs: no " + topic + "-" + p);
                        continue;
                    }
                    want(p == 0 ? ri.size() > 0 : ri.size() == 0, "describeLogDirs: " + topic + "-" + p + " size "
                            + ri.size());
                    want(ri.offsetLag() == 0 && !ri.isFuture(), "describeLogDirs: " + topic + "-" + p + " " + ri);
                }
            });

            // --- AlterReplicaLogDirs ------------------------------------------------
            step("alterReplicaLogDirs", () -> {
                Map<String, LogDirDescription> dirs =
                        get(admin.describeLogDirs(List.of(nodeId)).allDescriptions()).get(nodeId);
                if (dirs == null || dirs.size() != 1) {
                    errors.add("alterReplicaLogDirs: log dirs " + dirs);
                    return;
                }
                String dir = dirs.keySet().iterator().next();
                // One data dir: the replica is already in it, so nothing moves.
                get(admin.alterReplicaLogDirs(Map.of(new TopicPartitionReplica(topic, 0, nodeId), dir)).all());
                wantError("alterReplicaLogDirs to a dir that is not the broker's",
                        admin.alterReplicaLogDirs(Map.of(new TopicPartitionReplica(topic, 1, nodeId), dir + "-elsewhere")).all(),
                        LogDirNotFoundException.class);
            });

            // --- ElectLeaders -------------------------------------------------------
            step("electLeaders", () -> {
                TopicPartition tp0 = new TopicPartition(topic, 0);
                TopicPartition tp1 = new TopicPartition(topic, 1);
                for (ElectionType t : ElectionType.values()) {
                    Map<TopicPartition, Optional<Throwable>> r =
                            get(admin.electLeaders(t, Set.of(tp0, tp1)).partitions());
                    for (TopicPartition tp : List.of(tp0, tp1)) {
                        Optional<Throwable> e = r.get(tp);
                        want(e != null && e.isPresent() && e.get() instanceof ElectionNotNeededException,
                                "electLeaders " + t + " " + tp + ": " + e + ", want ElectionNotNeededException");
                    }
                }
                Map<TopicPartition, Optional<Throwable>> all =
                        get(admin.electLeaders(ElectionType.PREFERRED, null).partitions());
                want(all.isEmpty(), "electLeaders of every partition: " + all + ", want none (none needs one)");
                TopicPartition bad = new TopicPartition(topic, 99);
                Map<TopicPartition, Optional<Throwable>> r =
                        get(admin.electLeaders(ElectionType.PREFERRED, Set.of(bad)).partitions());
                Optional<Throwable> e = r.get(bad);
                want(e != null && e.isPresent() && e.get() instanceof UnknownTopicOrPartitionException,
                        "electLeaders " + bad + ": " + e + ", want UnknownTopicOrPartitionException");
            });

            // --- List/AlterPartitionReassignments ---------------------------------
            step("partitionReassignments", () -> {
                TopicPartition tp0 = new TopicPartition(topic, 0);
                Map<TopicPartition, PartitionReassignment> l = get(admin.listPartitionReassignments().reassignments());
                want(l.isEmpty(), "listPartitionReassignments: " + l);
                l = get(admin.listPartitionReassignments(Set.of(tp0, new TopicPartition(topic + "-nope", 0)))
                        .reassignments());
                want(l.isEmpty(), "listPartitionReassignments of named partitions: " + l);
                wantError("alterPartitionReassignments cancel with none in progress",
                        admin.alterPartitionReassignments(Map.of(tp0, Optional.empty())).all(),
                        NoReassignmentInProgressException.class);
                get(admin.alterPartitionReassignments(
                        Map.of(tp0, Optional.of(new NewPartitionReassignment(List.of(nodeId))))).all());
                wantError("alterPartitionReassignments to an unknown broker",
                        admin.alterPartitionReassignments(
                                Map.of(tp0, Optional.of(new NewPartitionReassignment(List.of(nodeId + 99))))).all(),
                        InvalidReplicaAssignmentException.class);
                wantError("alterPartitionReassignments of an unknown partition",
                        admin.alterPartitionReassignments(Map.of(new TopicPartition(topic, 99),
                                Optional.of(new NewPartitionReassignment(List.of(nodeId))))).all(),
                        UnknownTopicOrPartitionException.class);
                l = get(admin.listPartitionReassignments().reassignments());
                want(l.isEmpty(), "listPartitionReassignments after a no-op reassignment: " + l);
            });

            // --- Describe/AlterClientQuotas ----------------------------------------
            step("clientQuotas", () -> {
                String user = "compat-" + topic;
                ClientQuotaEntity ent = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, user));
                ClientQuotaFilter f = ClientQuotaFilter.containsOnly(
                        List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user)));
                get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(ent, List.of(
                        new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0),
                        new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0))))).all());
                Map<String, Double> want1 = Map.of("producer_byte_rate", 1024.0, "consumer_byte_rate", 2048.0);
                Map<ClientQuotaEntity, Map<String, Double>> got = awaitQuotas(admin, f, Map.of(ent, want1));
                want(got.equals(Map.of(ent, want1)), "describeClientQuotas: " + got + ", want " + want1);
                get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(ent, List.of(
                        new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all());
                Map<String, Double> want2 = Map.of("consumer_byte_rate", 2048.0);
                got = awaitQuotas(admin, f, Map.of(ent, want2));
                want(got.equals(Map.of(ent, want2)), "describeClientQuotas after a removal: " + got);
                wantError("alterClientQuotas unknown key", admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                        ent, List.of(new ClientQuotaAlteration.Op("bogus_rate", 1.0))))).all(),
                        InvalidRequestException.class);
                wantError("alterClientQuotas zero rate", admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                        ent, List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 0.0))))).all(),
                        InvalidRequestException.class);
                get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(ent, List.of(
                        new ClientQuotaAlteration.Op("consumer_byte_rate", null))))).all());
                got = awaitQuotas(admin, f, Map.of());
                want(got.isEmpty(), "describeClientQuotas after removing everything: " + got);
            });

            // --- DescribeFeatures (ApiVersions) / UpdateFeatures -------------------
            step("features", () -> {
                FeatureMetadata fm = get(admin.describeFeatures().featureMetadata());
                System.out.println(NAME + ": features " + fm);
                for (Map.Entry<String, FinalizedVersionRange> e : fm.finalizedFeatures().entrySet()) {
                    SupportedVersionRange s = fm.supportedFeatures().get(e.getKey());
                    want(s != null && e.getValue().maxVersionLevel() <= s.maxVersion()
                            && e.getValue().maxVersionLevel() >= s.minVersion(),
                            "describeFeatures: finalized " + e.getKey() + " " + e.getValue() + " outside supported "
                                    + s);
                }
                want(fm.finalizedFeatures().isEmpty() || fm.finalizedFeaturesEpoch().isPresent(),
                        "describeFeatures: finalized features without an epoch");
                wantError("updateFeatures of an unknown feature", admin.updateFeatures(
                        Map.of("compat.no.such.feature", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                        new UpdateFeaturesOptions().validateOnly(true)).all(), InvalidUpdateVersionException.class);
            });

            // --- DeleteTopics ---------------------------------------------------------
            step("deleteTopics", () -> {
                get(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(byIdId[0]))).all());
                get(admin.deleteTopics(List.of(topic)).all());
                Set<String> names = null;
                for (int i = 0; i < 50; i++) {
                    names = get(admin.listTopics().names());
                    if (!names.contains(topic) && !names.contains(byId)) {
                        break;
                    }
                    Thread.sleep(200);
                }
                want(!names.contains(topic) && !names.contains(byId), "deleteTopics: still listed: " + names);
                wantError("describeTopics deleted", admin.describeTopics(List.of(topic)).allTopicNames(),
                        UnknownTopicOrPartitionException.class);
                wantError("deleteTopics again", admin.deleteTopics(List.of(topic)).all(),
                        UnknownTopicOrPartitionException.class);
                wantError("deleteTopics unknown id",
                        admin.deleteTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all(),
                        UnknownTopicIdException.class);
            });
        }
    }

    static Map<ClientQuotaEntity, Map<String, Double>> awaitQuotas(Admin admin, ClientQuotaFilter f,
            Map<ClientQuotaEntity, Map<String, Double>> want) throws Exception {
        Map<ClientQuotaEntity, Map<String, Double>> got = null;
        for (int i = 0; i < 50; i++) {
            got = get(admin.describeClientQuotas(f).entities());
            if (got.equals(want)) {
                return got;
            }
            Thread.sleep(200);
        }
        return got;
    }
}
