#!/bin/sh
# Regenerates the *.golden files beside each segment file with Apache
# Kafka's own kafka-dump-log (org.apache.kafka.tools.DumpLogSegments), from Kafka's
# jars in $KAFKA_REF (default /work/kafka-ref: the runtime dependencies of
# org.apache.kafka:kafka_2.13:4.3.1 and org.apache.kafka:kafka-tools:4.3.1,
# fetched with mvn dependency:copy-dependencies). Run from this directory:
#   sh golden.sh
# Standard output goes to FILE.MODE.golden, standard error (without SLF4J's
# start-up notice, and with this directory's absolute path written as
# $DIR) to FILE.MODE.stderr when there is any, and a non-zero exit
# status to FILE.MODE.status.
set -eu
ref=${KAFKA_REF:-/work/kafka-ref}
dump() { # file mode flags...
	f=$1 mode=$2
	shift 2
	status=0
	java -cp "$ref/*" org.apache.kafka.tools.DumpLogSegments --files "$f" "$@" >"$f.$mode.golden" 2>"$f.$mode.stderr.tmp" || status=$?
	rm -f "$f.$mode.status"
	[ "$status" = 0 ] || echo "$status" >"$f.$mode.status"
	# An exception Kafka's tool dies of is kept as its message alone
	# (what kcompatd prints), without the class name and stack trace.
	grep -v -e '^SLF4J' -e '^	at ' -e '^	\.\.\. ' "$f.$mode.stderr.tmp" |
		sed -e "s|$(pwd)/|\$DIR/|g" -e 's/^Exception in thread "main" [a-zA-Z.]*: //' >"$f.$mode.stderr" || true
	rm -f "$f.$mode.stderr.tmp"
	[ -s "$f.$mode.stderr" ] || rm -f "$f.$mode.stderr"
}
for f in */*.log; do
	dump "$f" batches
	dump "$f" data --print-data-log
	case $f in
	# codecs-0 with the offsets decoder: a record without a key stops the
	# dump ("message had a missing key").
	__consumer_offsets-* | codecs-*) dump "$f" offsets --offsets-decoder ;;
	__transaction_state-*) dump "$f" txnlog --transaction-log-decoder ;;
	esac
done
for f in */*.index */*.timeindex */*.snapshot */*.txnindex; do
	dump "$f" dump
done
