package dev.kcompatd.compat;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DeleteAclsResult;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The Java AdminClient's ACL calls (createAcls, describeAcls with filters,
 * deleteAcls) against a broker with an authorizer whose super user is the
 * PLAINTEXT listener's User:ANONYMOUS, asserting what Apache Kafka 4.3.1
 * answers (COMPAT_AGAINST=kafka passes it). Every ACL names principals
 * unique to the run, so runs on one broker do not see each other's.
 *
 * Usage: AclChecks BOOTSTRAP TOPIC. Exit 0 on success, 1 on any mismatch.
 */
public final class AclChecks {
    static final String NAME = "java-acl";
    static final long TIMEOUT_S = 30;
    static final List<String> errors = new ArrayList<>();

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

    static AclBinding binding(ResourceType rt, String name, PatternType pt, String principal, String host,
            AclOperation op, AclPermissionType perm) {
        return new AclBinding(new ResourcePattern(rt, name, pt), new AccessControlEntry(principal, host, op, perm));
    }

    static AclBindingFilter filter(ResourceType rt, String name, PatternType pt, String principal, String host,
            AclOperation op, AclPermissionType perm) {
        return new AclBindingFilter(new ResourcePatternFilter(rt, name, pt),
                new AccessControlEntryFilter(principal, host, op, perm));
    }

    static AclBindingFilter byPrincipal(String principal) {
        return filter(ResourceType.ANY, null, PatternType.ANY, principal, null, AclOperation.ANY, AclPermissionType.ANY);
    }

    static Set<AclBinding> describe(Admin admin, AclBindingFilter f) throws Exception {
        return new HashSet<>(get(admin.describeAcls(f).values()));
    }

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: AclChecks BOOTSTRAP TOPIC");
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

    static void run(String bootstrap, String topic) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        String alice = "User:alice-" + topic, bob = "User:bob-" + topic, ops = "User:ops-" + topic;
        AclBinding read = binding(ResourceType.TOPIC, topic, PatternType.LITERAL, alice, "*",
                AclOperation.READ, AclPermissionType.ALLOW);
        AclBinding write = binding(ResourceType.TOPIC, topic + "-", PatternType.PREFIXED, alice, "*",
                AclOperation.WRITE, AclPermissionType.ALLOW);
        AclBinding denyGroup = binding(ResourceType.GROUP, topic + "-g", PatternType.LITERAL, bob, "10.0.0.1",
                AclOperation.READ, AclPermissionType.DENY);
        AclBinding txn = binding(ResourceType.TRANSACTIONAL_ID, topic + "-tx", PatternType.LITERAL, bob, "*",
                AclOperation.WRITE, AclPermissionType.ALLOW);
        AclBinding cluster = binding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, ops, "*",
                AclOperation.DESCRIBE, AclPermissionType.ALLOW);
        List<AclBinding> all = List.of(read, write, denyGroup, txn, cluster);
        try (Admin admin = Admin.create(p)) {
            step("createAcls", () -> {
                get(admin.createAcls(all).all());
                // Creating an ACL that exists succeeds and adds nothing.
                get(admin.createAcls(List.of(read)).all());
                Set<AclBinding> got = new HashSet<>();
                for (String who : List.of(alice, bob, ops)) {
                    got.addAll(describe(admin, byPrincipal(who)));
                }
                want(got.equals(new HashSet<>(all)), "created " + all + ", described " + got);
            });
            // (The Java client itself refuses MATCH and ANY in a binding.)
            step("createAcls refused", () -> {
                Map<AclBinding, KafkaFuture<Void>> res = admin.createAcls(List.of(
                        binding(ResourceType.CLUSTER, "other", PatternType.LITERAL, ops, "*", AclOperation.ALTER, AclPermissionType.ALLOW),
                        binding(ResourceType.TOPIC, "", PatternType.LITERAL, ops, "*", AclOperation.READ, AclPermissionType.ALLOW))).values();
                for (Map.Entry<AclBinding, KafkaFuture<Void>> e : res.entrySet()) {
                    try {
                        get(e.getValue());
                        errors.add("created " + e.getKey() + ", want InvalidRequestException");
                    } catch (ExecutionException x) {
                        want(x.getCause() instanceof InvalidRequestException,
                                e.getKey() + ": " + x.getCause() + ", want InvalidRequestException");
                        System.out.println(NAME + ": refused: " + x.getCause().getMessage());
                    }
                }
                want(describe(admin, byPrincipal(ops)).equals(Set.of(cluster)), "a refused ACL was stored");
            });
            step("describeAcls filters", () -> {
                want(describe(admin, byPrincipal(alice)).equals(Set.of(read, write)), "by principal");
                want(describe(admin, filter(ResourceType.TOPIC, topic + "-x", PatternType.MATCH, alice, null,
                        AclOperation.ANY, AclPermissionType.ANY)).equals(Set.of(write)), "MATCH " + topic + "-x");
                want(describe(admin, filter(ResourceType.TOPIC, topic, PatternType.MATCH, alice, null,
                        AclOperation.ANY, AclPermissionType.ANY)).equals(Set.of(read)), "MATCH " + topic);
                want(describe(admin, filter(ResourceType.TOPIC, topic + "-", PatternType.PREFIXED, null, null,
                        AclOperation.ANY, AclPermissionType.ANY)).equals(Set.of(write)), "PREFIXED " + topic + "-");
                want(describe(admin, filter(ResourceType.TOPIC, topic + "-", PatternType.LITERAL, null, null,
                        AclOperation.ANY, AclPermissionType.ANY)).isEmpty(), "LITERAL " + topic + "-");
                want(describe(admin, filter(ResourceType.ANY, null, PatternType.ANY, bob, "10.0.0.1",
                        AclOperation.ANY, AclPermissionType.DENY)).equals(Set.of(denyGroup)), "DENY from 10.0.0.1");
                want(describe(admin, filter(ResourceType.ANY, null, PatternType.ANY, bob, null,
                        AclOperation.WRITE, AclPermissionType.ANY)).equals(Set.of(txn)), "WRITE");
                want(describe(admin, filter(ResourceType.CLUSTER, null, PatternType.ANY, ops, null,
                        AclOperation.ANY, AclPermissionType.ALLOW)).equals(Set.of(cluster)), "CLUSTER");
            });
            step("deleteAcls", () -> {
                AclBindingFilter prefixed = filter(ResourceType.TOPIC, null, PatternType.PREFIXED, alice, null,
                        AclOperation.ANY, AclPermissionType.ANY);
                AclBindingFilter byAlice = byPrincipal(alice);
                DeleteAclsResult res = admin.deleteAcls(List.of(prefixed, byAlice));
                Map<AclBindingFilter, KafkaFuture<DeleteAclsResult.FilterResults>> values = res.values();
                Set<AclBinding> first = new HashSet<>(), second = new HashSet<>();
                for (DeleteAclsResult.FilterResult r : get(values.get(prefixed)).values()) {
                    want(r.exception() == null, "delete: " + r.exception());
                    first.add(r.binding());
                }
                for (DeleteAclsResult.FilterResult r : get(values.get(byAlice)).values()) {
                    second.add(r.binding());
                }
                // An ACL matched by two filters is listed under both.
                want(first.equals(Set.of(write)), "deleted by the PREFIXED filter: " + first);
                want(second.equals(Set.of(read, write)), "deleted by the principal filter: " + second);
                want(describe(admin, byPrincipal(alice)).isEmpty(), "alice's ACLs left after delete");
                Collection<AclBinding> rest = get(admin.deleteAcls(List.of(byPrincipal(bob), byPrincipal(ops))).all());
                want(new HashSet<>(rest).equals(Set.of(denyGroup, txn, cluster)), "deleted " + rest);
                want(get(admin.deleteAcls(List.of(byPrincipal(bob))).all()).isEmpty(), "deleted twice");
            });
        }
    }
}
