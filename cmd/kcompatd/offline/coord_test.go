package offline

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCoordinatorParsers(t *testing.T) {
	commitKey := (&kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 3}).AppendTo(nil)
	legacyKey := (&kmsg.OffsetCommitKey{Version: 0, Group: "g", Topic: "t", Partition: 3}).AppendTo(nil)
	v1 := kmsg.NewOffsetCommitValue()
	v1.Version, v1.Offset, v1.Metadata, v1.CommitTimestamp, v1.ExpireTimestamp = 1, 42, "m", 1000, 2000
	v3 := kmsg.NewOffsetCommitValue()
	v3.Version, v3.Offset, v3.LeaderEpoch, v3.CommitTimestamp = 3, 43, 5, 1001
	txnKey := (&kmsg.TxnMetadataKey{Version: 0, TransactionalID: "x"}).AppendTo(nil)
	tv0 := kmsg.NewTxnMetadataValue()
	tv0.Version, tv0.ProducerID, tv0.ProducerEpoch, tv0.TimeoutMillis, tv0.State = 0, 9, 1, 60000, 0
	tv0.LastUpdateTimestamp, tv0.StartTimestamp = 5, -1
	for _, tc := range []struct {
		name       string
		parser     recordParser
		key, value []byte
		wantK      string
		wantV      string // "" means no value printed
	}{
		{"offset commit v1", offsetsParser, commitKey, v1.AppendTo(nil), `{"type":"1","data":{"group":"g","topic":"t","partition":3}}`,
			`{"version":"1","data":{"offset":42,"metadata":"m","commitTimestamp":1000,"expireTimestamp":2000}}`},
		{"offset commit v3", offsetsParser, commitKey, v3.AppendTo(nil), `{"type":"1","data":{"group":"g","topic":"t","partition":3}}`,
			`{"version":"3","data":{"offset":43,"leaderEpoch":5,"metadata":"","commitTimestamp":1001}}`},
		{"legacy key", offsetsParser, legacyKey, nil, `{"type":"0","data":{"group":"g","topic":"t","partition":3}}`, "<DELETE>"},
		{"tombstone", offsetsParser, commitKey, nil, `{"type":"1","data":{"group":"g","topic":"t","partition":3}}`, "<DELETE>"},
		{"KIP-848 record", offsetsParser, []byte{0, 3, 0, 1, 'g'}, []byte{0, 0}, "Error at offset 7, skipping. kcompatd does not decode ConsumerGroupMetadata records (type 3)", ""},
		{"unknown type", offsetsParser, []byte{0, 9, 0, 0}, nil, "Unknown record type 9 at offset 7, skipping.", ""},
		{"short key", offsetsParser, []byte{1}, nil, "Error at offset 7, skipping. record key of 1 bytes", ""},
		{"truncated value", offsetsParser, commitKey, []byte{0, 3, 0}, `Error at offset 7, skipping.`, ""},
		{"txn v0", txnLogParser, txnKey, tv0.AppendTo(nil), `{"type":"0","data":{"transactionalId":"x"}}`,
			`{"version":"0","data":{"producerId":9,"producerEpoch":1,"transactionTimeoutMs":60000,"transactionStatus":0,"transactionPartitions":null,"transactionLastUpdateTimestampMs":5,"transactionStartTimestampMs":-1}}`},
		{"txn tombstone", txnLogParser, txnKey, nil, `{"type":"0","data":{"transactionalId":"x"}}`, "<DELETE>"},
		{"txn unknown type", txnLogParser, []byte{0, 1, 0, 0}, nil, "Unknown record type 1 at offset 7, skipping.", ""},
	} {
		k, v := tc.parser(7, tc.key, tc.value)
		if k == nil || len(*k) < len(tc.wantK) || (*k)[:len(tc.wantK)] != tc.wantK {
			t.Errorf("%s: key %v, want %s", tc.name, deref(k), tc.wantK)
		}
		if deref(v) != tc.wantV {
			t.Errorf("%s: value %q, want %q", tc.name, deref(v), tc.wantV)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
