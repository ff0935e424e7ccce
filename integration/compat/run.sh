#!/usr/bin/env bash
# make compat: stock Kafka clients of other languages against kcompatd.
#
# Installs the pinned clients into this directory (.venv, node_modules,
# java/target; oracle/lib for COMPAT_AGAINST=kafka), builds kcompatd, starts it on a free 127.0.0.1 port with a
# temporary data dir, runs each client's round trip (create topic, produce,
# read back, compare byte for byte) and prints "N passed, M failed".
#
# Environment (all optional):
#   COMPAT_ONLY            clients to run, space separated
#                          (kafka-python kafka-python-0.11 confluent-kafka
#                          confluent-admin kafkajs java java-admin java-acl
#                          kafka-python-next confluent-kafka-next kafkajs-next
#                          java-next; java-848 confluent-848: consumer groups
#                          of the KIP-848 protocol, group.protocol=consumer;
#                          java-sasl confluent-sasl kafkajs-sasl: SASL and TLS;
#                          java-share: the KafkaShareConsumer, KIP-932;
#                          java-streams: Kafka Streams, group.protocol=streams;
#                          the *-admin ones drive the admin APIs: configs,
#                          partitions, log dirs, quotas, features;
#                          java-acl creates, lists and deletes ACLs (with it
#                          the broker runs Kafka's authorizer, User:ANONYMOUS
#                          the super user, so other clients keep every right);
#                          kafka-python-0.11 pins the oldest request versions
#                          Kafka 4 still serves: Produce v3, Fetch v5, Metadata v4;
#                          the *-next ones run idempotent producers, consumer
#                          groups with commits, and transactions (committed,
#                          aborted, offsets sent to a transaction) read with
#                          read_committed and read_uncommitted;
#                          the *-sasl ones log in on the extra listeners the
#                          broker then gets: SASL_PLAINTEXT with PLAIN and
#                          SCRAM-SHA-256/512, SASL_SSL with SCRAM-SHA-512,
#                          at $SASL_BOOTSTRAP and $SASL_SSL_BOOTSTRAP)
#   COMPAT_AGAINST         "kafka" runs the same clients against Apache Kafka
#                          (oracle/pom.xml, one KRaft node on 127.0.0.1)
#                          instead of kcompatd: what passes there is what
#                          Kafka does
#   COMPAT_BOOTSTRAP       host:port of a running broker to test instead of
#                          building and starting one
#   COMPAT_CLIENT_TIMEOUT  seconds per client round trip (default 180)
#   COMPAT_INSTALL_TIMEOUT seconds per install step (default 900)
#   COMPAT_KEEP            1 keeps the temp dir (broker log, data dir)
#   COMPAT_DEBUG           1 turns on each client's protocol debug log
#   COMPAT_BROKER_ARGS     extra kcompatd flags; the default rolls small
#                          segments (kcompatd.log.internal.segment.bytes: Kafka 4
#                          wants log.segment.bytes >= 1 MiB) with a dense offset
#                          index so that reads
#                          cross segment boundaries and use the index
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FIRST_SLICE="kafka-python kafka-python-0.11 confluent-kafka confluent-admin kafkajs java java-admin java-acl"
# Consumer groups, idempotence and transactions.
NEXT_SLICE="kafka-python-next confluent-kafka-next kafkajs-next java-next"
# KIP-848 consumer groups (group.protocol=consumer).
K848_SLICE="java-848 confluent-848"
# SASL and TLS: extra listeners, users, a certificate made at run time.
SASL_SLICE="java-sasl confluent-sasl kafkajs-sasl"
# Share groups (KIP-932) and Kafka Streams on the streams rebalance
# protocol (KIP-1071).
GROUPS_SLICE="java-share java-streams"
ALL_CLIENTS="$FIRST_SLICE $NEXT_SLICE $K848_SLICE $SASL_SLICE $GROUPS_SLICE"
# Known clients outside the default list, run with COMPAT_ONLY.
EXTRA_CLIENTS=""
CLIENTS=${COMPAT_ONLY:-$ALL_CLIENTS}
CLIENT_TIMEOUT=${COMPAT_CLIENT_TIMEOUT:-180}
INSTALL_TIMEOUT=${COMPAT_INSTALL_TIMEOUT:-900}
PYTHON=${PYTHON:-python3}
BROKER=kcompatd
case ${COMPAT_AGAINST:-kcompatd} in
  kcompatd) ;;
  kafka) BROKER=kafka ;;
  *) echo "compat: COMPAT_AGAINST must be kcompatd or kafka" >&2; exit 2 ;;
esac
# java-acl needs an authorizer on the broker: User:ANONYMOUS (PLAINTEXT) and
# the *-sasl clients' User:alice are its super users, so every other client
# keeps all rights.
AUTHZ_PROPS=()
case " $CLIENTS " in
  *" java-acl "*) AUTHZ_PROPS=(authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer "super.users=User:ANONYMOUS;User:alice") ;;
esac
read -r -a BROKER_ARGS <<<"${COMPAT_BROKER_ARGS:--c kcompatd.log.internal.segment.bytes=65536 -c log.index.interval.bytes=1024}"

for c in $CLIENTS; do
  case " $ALL_CLIENTS $EXTRA_CLIENTS " in
    *" $c "*) ;;
    *) echo "compat: unknown client '$c' (known: $ALL_CLIENTS $EXTRA_CLIENTS)" >&2; exit 2 ;;
  esac
done
for tool in timeout "$PYTHON" node npm java mvn; do
  command -v "$tool" >/dev/null || echo "compat: warning: '$tool' not found; clients needing it will fail" >&2
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kcompatd-compat.XXXXXX")
BROKER_PID=""
BROKER_LOG=""

stop_broker() {
  [ -n "$BROKER_PID" ] || return 0
  if kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID" 2>/dev/null || true
    # Bounded wait for a clean shutdown, then force it.
    for _ in $(seq 1 50); do
      kill -0 "$BROKER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$BROKER_PID" 2>/dev/null || true
  fi
  wait "$BROKER_PID" 2>/dev/null || true
  BROKER_PID=""
}

cleanup() {
  stop_broker
  if [ "${COMPAT_KEEP:-0}" = 1 ]; then
    echo "compat: kept $TMP"
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "compat: $*"; }

# sha256 of the given files, to skip installs whose inputs did not change.
stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# --- installs (idempotent; each guarded by a stamp of its inputs) -----------
# These run as `if` conditions, where bash ignores set -e: every step that
# can fail says `|| return 1` itself.

install_python() {
  local venv="$HERE/.venv" stamp
  stamp=$(stamp_of "$HERE/requirements.txt") || return 1
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.compat-stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  if [ ! -x "$venv/bin/python" ]; then
    rm -rf "$venv"
    # Debian's python3 lacks ensurepip unless python3-venv is installed:
    # fall back to a pip-less venv filled by the system pip (--python).
    if ! timeout "$INSTALL_TIMEOUT" "$PYTHON" -m venv "$venv"; then
      rm -rf "$venv"
      timeout "$INSTALL_TIMEOUT" "$PYTHON" -m venv --without-pip "$venv" || return 1
    fi
  fi
  if [ -x "$venv/bin/pip" ]; then
    timeout "$INSTALL_TIMEOUT" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      -r "$HERE/requirements.txt" || return 1
  else
    timeout "$INSTALL_TIMEOUT" "$PYTHON" -m pip --python "$venv/bin/python" install -q \
      --disable-pip-version-check -r "$HERE/requirements.txt" || return 1
  fi
  echo "$stamp" >"$venv/.compat-stamp"
}

install_node() {
  local stamp
  stamp=$(stamp_of "$HERE/package.json" "$HERE/package-lock.json") || return 1
  if [ "$(cat "$HERE/node_modules/.compat-stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  (cd "$HERE" && timeout "$INSTALL_TIMEOUT" npm ci --no-audit --no-fund --loglevel=error) || return 1
  echo "$stamp" >"$HERE/node_modules/.compat-stamp"
}

install_java() {
  local stamp
  stamp=$(cd "$HERE/java" && find pom.xml src -type f | sort | xargs cat | sha256sum | cut -d' ' -f1) || return 1
  if [ -f "$HERE/java/target/compat-java.jar" ] &&
    [ "$(cat "$HERE/java/target/.compat-stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  # Maven's quiet mode still prints colour resets: keep its output for failures.
  if ! timeout "$INSTALL_TIMEOUT" mvn -q -B -f "$HERE/java/pom.xml" clean package >"$TMP/mvn.log" 2>&1; then
    sed 's/^/  mvn| /' "$TMP/mvn.log"
    return 1
  fi
  echo "$stamp" >"$HERE/java/target/.compat-stamp"
}

install_oracle() {
  local stamp
  stamp=$(stamp_of "$HERE/oracle/pom.xml") || return 1
  if [ "$(cat "$HERE/oracle/lib/.compat-stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  rm -rf "$HERE/oracle/lib"
  if ! timeout "$INSTALL_TIMEOUT" mvn -q -B -f "$HERE/oracle/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime "-DoutputDirectory=$HERE/oracle/lib" >"$TMP/mvn-oracle.log" 2>&1; then
    sed 's/^/  mvn| /' "$TMP/mvn-oracle.log"
    return 1
  fi
  echo "$stamp" >"$HERE/oracle/lib/.compat-stamp"
}

# --- the broker ---------------------------------------------------------------

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Apache Kafka as the oracle: one KRaft node (broker + controller) on
# 127.0.0.1, with the settings a single node needs, formatted with the
# release's default features (4.3.1: transaction.version=2,
# group.version=1, as kcompatd finalizes them).
start_oracle() {
  local port=$1 data=$2 props="$TMP/server.$BROKER_RUN.properties" cport cid
  cport=$(free_port) || return 1
  {
    echo "process.roles=broker,controller"
    echo "node.id=1"
    echo "controller.quorum.voters=1@127.0.0.1:$cport"
    echo "listeners=PLAINTEXT://127.0.0.1:$port$SASL_LISTENERS,CONTROLLER://127.0.0.1:$cport"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port$SASL_LISTENERS"
    echo "controller.listener.names=CONTROLLER"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$SASL_PROTOCOLS"
    echo "log.dirs=$data"
    echo "offsets.topic.replication.factor=1"
    echo "transaction.state.log.replication.factor=1"
    echo "transaction.state.log.min.isr=1"
    echo "group.initial.rebalance.delay.ms=0"
    echo "share.coordinator.state.topic.replication.factor=1"
    echo "share.coordinator.state.topic.min.isr=1"
    echo "group.share.min.record.lock.duration.ms=1000"
    [ -z "$SASL_LISTENERS" ] || sasl_props
    for prop in ${AUTHZ_PROPS[@]+"${AUTHZ_PROPS[@]}"}; do echo "$prop"; done
  } >"$props" || return 1
  cid=$(timeout 120 java -cp "$HERE/oracle/lib/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
  if [ -z "$cid" ] || ! timeout 120 java -cp "$HERE/oracle/lib/*" kafka.tools.StorageTool format \
    -t "$cid" -c "$props" ${SASL_ORACLE_FORMAT[@]+"${SASL_ORACLE_FORMAT[@]}"} >"$BROKER_LOG" 2>&1; then
    log "kafka-storage format failed; its output:"
    sed 's/^/  kafka| /' "$BROKER_LOG"
    return 1
  fi
  java -Xmx512m -cp "$HERE/oracle/lib/*" kafka.Kafka "$props" >>"$BROKER_LOG" 2>&1 &
  BROKER_PID=$!
}

# --- SASL listeners, for the *-sasl clients -----------------------------------
# Both brokers get the same properties; the users are made as each makes
# them: kcompatd from kcompatd.scram.users (and PLAIN's from the JAAS
# config), Kafka by kafka-storage format --add-scram.

SASL_ON=0
for c in $CLIENTS; do
  case " $SASL_SLICE " in *" $c "*) SASL_ON=1 ;; esac
done
SASL_USER=alice
SASL_PASSWORD=alice-secret
SASL_LISTENERS=""
SASL_PROTOCOLS=""
SASL_FLAGS=()
SASL_ORACLE_FORMAT=()
SASL_BOOTSTRAP=""
SASL_SSL_BOOTSTRAP=""
SASL_CA=""
export SASL_BOOTSTRAP SASL_SSL_BOOTSTRAP SASL_CA

# sasl_certs makes a throwaway CA (the clients' trust anchor, $SASL_CA) and
# the broker's PEM key store: its key and a certificate for 127.0.0.1.
sasl_certs() {
  local dir="$TMP/sasl"
  [ -f "$dir/server.pem" ] && return 0
  mkdir -p "$dir" || return 1
  # A throwaway CA and the broker's certificate, made with Go (no openssl).
  if ! (cd "$ROOT" && go run ./integration/compat/certgen "$dir") >"$dir/certgen.log" 2>&1; then
    sed 's/^/  certgen| /' "$dir/certgen.log"
    return 1
  fi
  SASL_CA="$dir/ca.pem"
}

# sasl_props prints the SASL listeners' properties, the same for both brokers.
sasl_props() {
  local scram="org.apache.kafka.common.security.scram.ScramLoginModule required;"
  echo "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
  echo "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"$SASL_USER\" password=\"$SASL_PASSWORD\" user_$SASL_USER=\"$SASL_PASSWORD\";"
  echo "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=$scram"
  echo "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=$scram"
  echo "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512"
  echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$scram"
  echo "listener.name.sasl_ssl.ssl.keystore.type=PEM"
  echo "listener.name.sasl_ssl.ssl.keystore.location=$TMP/sasl/server.pem"
}

# sasl_listeners picks the SASL listeners' ports for the broker being
# started (when a *-sasl client runs) and sets what both brokers read.
sasl_listeners() {
  [ "$SASL_ON" = 1 ] || return 0
  local sp ssp users line
  sasl_certs || return 1
  sp=$(free_port) || return 1
  ssp=$(free_port) || return 1
  SASL_LISTENERS=",SASL_PLAINTEXT://127.0.0.1:$sp,SASL_SSL://127.0.0.1:$ssp"
  SASL_PROTOCOLS=",SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
  SASL_BOOTSTRAP="127.0.0.1:$sp"
  SASL_SSL_BOOTSTRAP="127.0.0.1:$ssp"
  users="SCRAM-SHA-256=[name=$SASL_USER,password=$SASL_PASSWORD]"
  users+=",SCRAM-SHA-512=[name=$SASL_USER,password=$SASL_PASSWORD]"
  SASL_FLAGS=(-c "kcompatd.scram.users=$users")
  while IFS= read -r line; do SASL_FLAGS+=(-c "$line"); done < <(sasl_props)
  SASL_ORACLE_FORMAT=(--add-scram "SCRAM-SHA-256=[name=$SASL_USER,password=$SASL_PASSWORD]"
    --add-scram "SCRAM-SHA-512=[name=$SASL_USER,password=$SASL_PASSWORD]")
}

BROKER_RUN=0
start_broker() {
  BROKER_RUN=$((BROKER_RUN + 1))
  local port data="$TMP/data.$BROKER_RUN" tries=100 flags=("${BROKER_ARGS[@]}")
  port=$(free_port) || return 1
  mkdir -p "$data" || return 1
  BROKER_LOG="$TMP/$BROKER.$BROKER_RUN.log"
  sasl_listeners || return 1
  if [ "$BROKER" = kafka ]; then
    start_oracle "$port" "$data" || return 1
    tries=600 # a JVM and a KRaft quorum take their time
    flags=()
  else
    local prop
    for prop in ${AUTHZ_PROPS[@]+"${AUTHZ_PROPS[@]}"}; do flags+=(-c "$prop"); done
    "$TMP/kcompatd" -c "listeners=PLAINTEXT://127.0.0.1:$port$SASL_LISTENERS" -c "log.dirs=$data" ${flags[@]+"${flags[@]}"} ${SASL_FLAGS[@]+"${SASL_FLAGS[@]}"} \
      >"$BROKER_LOG" 2>&1 &
    BROKER_PID=$!
  fi
  BOOTSTRAP="127.0.0.1:$port"
  # Bounded wait for the listener.
  for _ in $(seq 1 "$tries"); do
    if ! kill -0 "$BROKER_PID" 2>/dev/null; then
      log "$BROKER exited during start-up; its log:"
      tail -n 50 "$BROKER_LOG" | sed "s/^/  $BROKER| /"
      BROKER_PID=""
      return 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      log "$BROKER (pid $BROKER_PID) listening on $BOOTSTRAP, data dir $data${flags[*]:+, flags: ${flags[*]}}"
      return 0
    fi
    sleep 0.1
  done
  log "$BROKER did not listen on $BOOTSTRAP within $((tries / 10)) s; its log:"
  tail -n 50 "$BROKER_LOG" | sed "s/^/  $BROKER| /"
  stop_broker
  return 1
}

# A free port found by binding can be taken before the broker binds it:
# try three ports before giving up.
start_broker_retry() {
  local attempt
  for attempt in 1 2 3; do
    start_broker && return 0
    [ "$attempt" = 3 ] || log "starting $BROKER again on another port"
  done
  return 1
}

broker_alive() {
  [ -n "${COMPAT_BOOTSTRAP:-}" ] && return 0
  [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null
}

# --- clients --------------------------------------------------------------------

# run_client NAME TOPIC: the round trip of one client against $BOOTSTRAP.
run_client() {
  local name=$1 topic=$2
  case $name in
    kafka-python)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        kafka_python_roundtrip.py "$BOOTSTRAP" "$topic") ;;
    kafka-python-0.11)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        kafka_python_roundtrip.py "$BOOTSTRAP" "$topic" 0.11) ;;
    confluent-kafka)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        confluent_roundtrip.py "$BOOTSTRAP" "$topic") ;;
    confluent-admin)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        confluent_admin.py "$BOOTSTRAP" "$topic") ;;
    kafka-python-next)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        kafka_python_next.py "$BOOTSTRAP" "$topic") ;;
    confluent-kafka-next)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        confluent_next.py "$BOOTSTRAP" "$topic") ;;
    confluent-848)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        confluent_848.py "$BOOTSTRAP" "$topic") ;;
    java-848)
      timeout -k 5 "$CLIENT_TIMEOUT" java -Xmx256m \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$([ "${COMPAT_DEBUG:-0}" = 1 ] && echo debug || echo warn)" \
        -cp "$HERE/java/target/compat-java.jar:$HERE/java/target/lib/*" \
        dev.kcompatd.compat.Consumer848 "$BOOTSTRAP" "$topic" ;;
    kafkajs)
      KAFKAJS_NO_PARTITIONER_WARNING=1 timeout -k 5 "$CLIENT_TIMEOUT" \
        node "$HERE/js/kafkajs_roundtrip.js" "$BOOTSTRAP" "$topic" ;;
    kafkajs-next)
      KAFKAJS_NO_PARTITIONER_WARNING=1 timeout -k 5 "$CLIENT_TIMEOUT" \
        node "$HERE/js/kafkajs_next.js" "$BOOTSTRAP" "$topic" ;;
    java | java-next)
      local mode=()
      if [ "$name" = java-next ]; then mode=(next); fi
      timeout -k 5 "$CLIENT_TIMEOUT" java -Xmx256m \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$([ "${COMPAT_DEBUG:-0}" = 1 ] && echo debug || echo warn)" \
        -cp "$HERE/java/target/compat-java.jar:$HERE/java/target/lib/*" \
        dev.kcompatd.compat.Main "$BOOTSTRAP" "$topic" "${mode[@]}" ;;
    java-streams)
      timeout -k 5 "$CLIENT_TIMEOUT" java -Xmx384m \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$([ "${COMPAT_DEBUG:-0}" = 1 ] && echo debug || echo error)" \
        -cp "$HERE/java/target/compat-java.jar:$HERE/java/target/lib/*" \
        dev.kcompatd.compat.StreamsChecks "$BOOTSTRAP" "$topic" ;;
    java-admin)
      timeout -k 5 "$CLIENT_TIMEOUT" java -Xmx256m \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$([ "${COMPAT_DEBUG:-0}" = 1 ] && echo debug || echo warn)" \
        -cp "$HERE/java/target/compat-java.jar:$HERE/java/target/lib/*" \
        dev.kcompatd.compat.AdminChecks "$BOOTSTRAP" "$topic" ;;
    java-share)
      timeout -k 5 "$CLIENT_TIMEOUT" java -Xmx256m \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$([ "${COMPAT_DEBUG:-0}" = 1 ] && echo debug || echo warn)" \
        -cp "$HERE/java/target/compat-java.jar:$HERE/java/target/lib/*" \
        dev.kcompatd.compat.ShareChecks "$BOOTSTRAP" "$topic" ;;
    java-sasl)
      timeout -k 5 "$CLIENT_TIMEOUT" java -Xmx256m \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$([ "${COMPAT_DEBUG:-0}" = 1 ] && echo debug || echo warn)" \
        -cp "$HERE/java/target/compat-java.jar:$HERE/java/target/lib/*" \
        dev.kcompatd.compat.SaslChecks "$SASL_SSL_BOOTSTRAP" "$topic" "$SASL_CA" "$SASL_USER" "$SASL_PASSWORD" ;;
    confluent-sasl)
      (cd "$HERE/python" && timeout -k 5 "$CLIENT_TIMEOUT" "$HERE/.venv/bin/python" -u \
        confluent_sasl.py "$SASL_BOOTSTRAP" "$topic" "$SASL_USER" "$SASL_PASSWORD") ;;
    kafkajs-sasl)
      KAFKAJS_NO_PARTITIONER_WARNING=1 timeout -k 5 "$CLIENT_TIMEOUT" \
        node "$HERE/js/kafkajs_sasl.js" "$SASL_BOOTSTRAP" "$topic" "$SASL_USER" "$SASL_PASSWORD" ;;
    java-acl)
      timeout -k 5 "$CLIENT_TIMEOUT" java -Xmx256m \
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=$([ "${COMPAT_DEBUG:-0}" = 1 ] && echo debug || echo warn)" \
        -cp "$HERE/java/target/compat-java.jar:$HERE/java/target/lib/*" \
        dev.kcompatd.compat.AclChecks "$BOOTSTRAP" "$topic" ;;
  esac
}

# The toolchain install a client needs.
install_kind() {
  case $1 in
    kafka-python* | confluent-*) echo python ;;
    kafkajs*) echo node ;;
    java*) echo java ;;
  esac
}

PASSED=0
FAILED=0
RESULTS=()
pass() { PASSED=$((PASSED + 1)); RESULTS+=("PASS $1"); }
fail() { FAILED=$((FAILED + 1)); RESULTS+=("FAIL $1: $2"); }

# Installs first, each at most once, so that a missing toolchain fails only
# the clients that need it.
declare -A INSTALLED=()
for c in $CLIENTS; do
  kind=$(install_kind "$c")
  [ -z "${INSTALLED[$kind]:-}" ] || continue
  log "installing the $kind clients"
  if ("install_$kind"); then
    INSTALLED[$kind]=ok
  else
    INSTALLED[$kind]=failed
    log "install of the $kind clients failed"
  fi
done

BROKER_OK=1
if [ -n "${COMPAT_BOOTSTRAP:-}" ]; then
  :
elif [ "$BROKER" = kafka ]; then
  log "installing Apache Kafka (the oracle)"
  if ! (install_oracle) || ! start_broker_retry; then
    BROKER_OK=0
  fi
else
  log "building kcompatd"
  if ! (cd "$ROOT" && timeout "$INSTALL_TIMEOUT" go build -o "$TMP/kcompatd" ./cmd/kcompatd); then
    log "go build ./cmd/kcompatd failed"
    BROKER_OK=0
  elif ! start_broker_retry; then
    BROKER_OK=0
  fi
fi
if [ -n "${COMPAT_BOOTSTRAP:-}" ]; then
  BOOTSTRAP=$COMPAT_BOOTSTRAP
  log "testing the broker at $BOOTSTRAP"
fi

RUN_ID="$(date +%s)-$$"
for c in $CLIENTS; do
  if [ "${INSTALLED[$(install_kind "$c")]}" != ok ]; then
    fail "$c" "install of the $(install_kind "$c") clients failed"
    continue
  fi
  if [ "$BROKER_OK" != 1 ]; then
    fail "$c" "no broker"
    continue
  fi
  if [ -z "$SASL_BOOTSTRAP" ] && case " $SASL_SLICE " in *" $c "*) true ;; *) false ;; esac; then
    # COMPAT_BOOTSTRAP names one listener; the SASL ones are set up here.
    fail "$c" "no SASL listeners (not started by this script with COMPAT_BOOTSTRAP)"
    continue
  fi
  # A broker that crashed under the previous client gets a fresh successor so
  # each client's result stands on its own.
  if ! broker_alive; then
    if ! start_broker_retry; then
      fail "$c" "$BROKER could not be restarted"
      continue
    fi
  fi
  log "running $c against $BOOTSTRAP"
  rc=0
  run_client "$c" "compat-$c-$RUN_ID" || rc=$?
  if ! broker_alive; then
    log "$BROKER died while serving $c; the end of its log:"
    tail -n 50 "$BROKER_LOG" | sed "s/^/  $BROKER| /"
    BROKER_PID=""
    fail "$c" "$BROKER died (client exit $rc)"
  elif [ "$rc" = 0 ]; then
    pass "$c"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    fail "$c" "timed out after ${CLIENT_TIMEOUT}s"
  else
    fail "$c" "exit $rc"
  fi
done

if [ "$FAILED" != 0 ] && [ -n "$BROKER_LOG" ] && [ -f "$BROKER_LOG" ]; then
  log "the end of the $BROKER log:"
  tail -n 30 "$BROKER_LOG" | sed "s/^/  $BROKER| /"
fi
for r in "${RESULTS[@]}"; do
  log "$r"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
