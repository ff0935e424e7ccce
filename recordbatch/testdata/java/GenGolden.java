// GenGolden writes the testdata/java_*.bin vectors with Apache Kafka's own
// client library (kafka-clients), through MemoryRecordsBuilder: the class
// the Java producer's RecordAccumulator builds every batch with, so the
// compressed forms (xerial-framed snappy, KafkaLZ4BlockOutputStream lz4,
// zstd-jni streaming zstd) are exactly what a Java producer sends. Control
// batches come from MemoryRecords.withEndTransactionMarker, which the
// broker's transaction marker path uses. Run (see golden_gen_test.go):
//
//   KCOMPATD_UPDATE_GOLDEN_JAVA=1 go test -count=1 -run TestGenerateGoldenJava ./recordbatch/
import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.RecordBatch;

public class GenGolden {
    static final long BASE = 1700000000000L;
    static final long PID = 4242;
    static final short EPOCH = 7;

    static Compression codec(String name) {
        switch (name) {
            case "none": return Compression.NONE;
            case "gzip": return Compression.gzip().build();
            case "snappy": return Compression.snappy().build();
            case "lz4": return Compression.lz4().build();
            case "zstd": return Compression.zstd().build();
        }
        throw new IllegalArgumentException(name);
    }

    static MemoryRecordsBuilder builder(String name) {
        return MemoryRecords.builder(ByteBuffer.allocate(1 << 20), RecordBatch.MAGIC_VALUE_V2, codec(name),
            TimestampType.CREATE_TIME, 0L, RecordBatch.NO_TIMESTAMP, PID, EPOCH, 0, false, RecordBatch.NO_PARTITION_LEADER_EPOCH);
    }

    static byte[] repeat(String s, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) b.append(s);
        return b.toString().getBytes();
    }

    // Same records as goldenRecords in golden_gen_test.go.
    static MemoryRecords small(String name) {
        MemoryRecordsBuilder b = builder(name);
        b.appendWithOffset(0, BASE, "k0".getBytes(), repeat("v0", 100), new Header[0]);
        b.appendWithOffset(1, BASE + 1, "k1".getBytes(), "hello".getBytes(),
            new Header[]{new RecordHeader("h1", "x".getBytes()), new RecordHeader("h2", null)});
        b.appendWithOffset(2, BASE + 2, null, "no key".getBytes(), new Header[0]);
        b.appendWithOffset(3, BASE + 3, "k3".getBytes(), null, new Header[0]);
        b.appendWithOffset(4, BASE - 5, new byte[0], new byte[0], new Header[0]);
        return b.build();
    }

    // Same as largeValue in golden_gen_test.go.
    static byte[] largeValue(int i) {
        String alpha = "abcdefghijklmnopqrstuvwxyz0123456789";
        byte[] v = new byte[1024];
        for (int j = 0; j < v.length; j++) v[j] = (byte) alpha.charAt((i + j * 7) % 36);
        return v;
    }

    static MemoryRecords large(String name) {
        MemoryRecordsBuilder b = builder(name);
        for (int i = 0; i < 100; i++)
            b.appendWithOffset(i, BASE + i, String.format("key-%03d", i).getBytes(), largeValue(i), new Header[0]);
        return b.build();
    }

    static void write(String dir, String file, MemoryRecords r) throws Exception {
        ByteBuffer buf = r.buffer();
        byte[] out = new byte[buf.remaining()];
        buf.duplicate().get(out);
        try (FileOutputStream f = new FileOutputStream(dir + "/" + file)) { f.write(out); }
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        for (String name : new String[]{"none", "gzip", "snappy", "lz4", "zstd"}) {
            write(dir, "java_" + name + ".bin", small(name));
            write(dir, "java_" + name + "_large.bin", large(name));
        }
        write(dir, "java_control_commit.bin", MemoryRecords.withEndTransactionMarker(100L, BASE, 3, PID, EPOCH,
            new EndTransactionMarker(ControlRecordType.COMMIT, 5)));
        write(dir, "java_control_abort.bin", MemoryRecords.withEndTransactionMarker(200L, BASE, 3, PID, EPOCH,
            new EndTransactionMarker(ControlRecordType.ABORT, 5)));
    }
}
