#!/bin/sh
# Regenerates the *.golden files beside each segment file with Apache
# Kafka's own kafka-dump-log (org.apache.kafka.tools.DumpLogSegments), from Kafka's
# jars in $KAFKA_REF (default /work/kafka-ref: the runtime dependencies of
# org.apache.kafka:kafka_2.13:4.3.1 and org.apache.kafka:kafka-tools:4.3.1,
# fetched with mvn dependency:copy-dependencies). Run from this directory:
#   sh golden.sh
# Standard output goes to FILE.MODE.golden, standard error (without SLF4J's
# start-up notice, and with this directory's absolute path written as
# $DIR) to FILE.MODE.stderr when there is any.
set -eu
ref=${KAFKA_REF:-/work/kafka-ref}
dump() { # file mode flags...
	f=$1 mode=$2
	shift 2
	java -cp "$ref/*" org.apache.kafka.tools.DumpLogSegments --files "$f" "$@" >"$f.$mode.golden" 2>"$f.$mode.stderr.tmp"
	grep -v '^SLF4J' "$f.$mode.stderr.tmp" | sed "s|$(pwd)/|\$DIR/|g" >"$f.$mode.stderr" || true
	rm -f "$f.$mode.stderr.tmp"
	[ -s "$f.$mode.stderr" ] || rm -f "$f.$mode.stderr"
}
for f in */*.log; do
	dump "$f" batches
	dump "$f" data --print-data-log
	case $f in
	__consumer_offsets-*) dump "$f" offsets --offsets-decoder ;;
	__transaction_state-*) dump "$f" txnlog --transaction-log-decoder ;;
	esac
done
for f in */*.index */*.timeindex */*.snapshot */*.txnindex; do
	dump "$f" dump
done
