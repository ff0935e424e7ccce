package protocol

// Produce: v3-13 served; v0-13 advertised
//
// Behavior (Kafka's KafkaApis.handleProduceRequest, ReplicaManager,
// UnifiedLog.analyzeAndValidateRecords and LogValidator, in their order):
//   - v0-v2 are advertised but close the connection, as Kafka 4 does
//     (KAFKA-18659; see advertiseFrom). Below v3 a partition's records
//     may be a v0/v1 message set, which we never store.
//   - Transactional batches without a transactional id fail the whole
//     request with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's
//     authorization check does.
//   - Per partition: an unknown topic or partition is
//     UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for v13's topic ids);
//     produce never creates topics (Kafka creates them only from
//     Metadata). Then the records must be exactly one v2 batch
//     (INVALID_RECORD), not zstd below v7 (UNSUPPORTED_COMPRESSION_TYPE).
//     acks other than 0, 1, -1 fail every remaining partition with
//     INVALID_REQUIRED_ACKS. Then the batch: base offset 0
//     (INVALID_RECORD), CRC (CORRUPT_MESSAGE), size <= max.message.bytes
//     (MESSAGE_TOO_LARGE), then every other check of recordbatch.Validate
//     (see errors.go for the codes), then per record a key on compacted
//     topics (INVALID_RECORD) and timestamps within
//     message.timestamp.before/after.max.ms for CreateTime topics, and no
//     LogAppendTime set by the producer (INVALID_TIMESTAMP); record errors
//     are listed in ErrorRecords (v8+) with Kafka's messages.
//   - Internal topics take produce only from client id __admin_client
//     (INVALID_TOPIC_EXCEPTION otherwise), as Kafka's ReplicaManager.
//   - A rejected batch writes nothing; the other partitions of the request
//     are unaffected.
//   - compression.type other than producer recompresses the batch into the
//     topic's codec, as Kafka does; LogAppendTime topics get their
//     timestamps stamped by partition.Log.Append.
//   - A transactional batch is first verified with the transaction
//     coordinator (Config.VerifyTxnPartition, Kafka 3.6+'s verification):
//     its error code is the partition's answer; without a coordinator it
//     is INVALID_TXN_STATE. From v12 (transaction.version 2, KIP-890
//     part 2) the coordinator adds the partition to the producer's
//     transaction instead (Config.AddTxnPartition, Kafka's ADD_PARTITION
//     operation for Produce v12+, whatever the finalized level): the
//     transaction starts there if none is open; a stale epoch is
//     INVALID_PRODUCER_EPOCH, another producer id
//     INVALID_PRODUCER_ID_MAPPING, a transaction still completing
//     NOT_ENOUGH_REPLICAS (retriable; Kafka retries it for
//     add.partitions.to.txn.retry.backoff.max.ms first, but markers here
//     are written before EndTxn answers, so only a failed marker write
//     leaves one completing). A verification guard taken on the partition
//     before asking (partition.Log.StartTxnVerification) makes a batch
//     that would open a transaction fail with INVALID_TXN_STATE if the
//     producer's marker was written in between.
//   - Batches with a producer id go through the partition's producer
//     state (partition/producer_state.go): a duplicate of one of the
//     producer's last five batches is answered with the original's base
//     offset (and its timestamp as LogAppendTime) and writes nothing;
//     otherwise OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH or
//     INVALID_TXN_STATE as Kafka's ProducerAppendInfo, with its message.
//   - acks=0: no response; if any partition failed, the connection is
//     closed instead, as Kafka does, so the producer notices and refreshes
//     its metadata. acks=1 and -1 answer once appended (one broker).
//
// Version notes:
//   - v1: throttle
//   - v2: LogAppendTime
//   - v3: TransactionalID; v2 batches only
//   - v5: LogStartOffset
//   - v7: zstd allowed
//   - v8: ErrorRecords, ErrorMessage
//   - v9: flexible
//   - v10, v11: CurrentLeader and NodeEndpoints (tagged, for
//     NOT_LEADER_OR_FOLLOWER, which one broker never answers)
//   - v12: no schema change (KIP-890 part 2: partitions join the
//     transaction implicitly)
//   - v13: topics by id (KIP-516)

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// adminClientID is Kafka's AdminUtils.ADMIN_CLIENT_ID, the one client id
// allowed to produce to internal topics.
const adminClientID = "__admin_client"

func init() {
	register(kmsg.Produce.Int16(), 3, 13, handleProduce)
	advertiseFrom(kmsg.Produce.Int16(), 0)
}

func handleProduce(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := r.produceResponse(req)
	useIDs := r.Version >= 13

	// The last occurrence of a topic-partition wins, as in Kafka's map.
	type tpKey struct {
		name string
		id   [16]byte
		part int32
	}
	key := func(t *kmsg.ProduceRequestTopic, p int32) tpKey {
		if useIDs {
			return tpKey{id: t.TopicID, part: p}
		}
		return tpKey{name: t.Topic, part: p}
	}
	last := make(map[tpKey][2]int)
	transactional := false
	for ti := range req.Topics {
		t := &req.Topics[ti]
		for pi, p := range t.Partitions {
			last[key(t, p.Partition)] = [2]int{ti, pi}
			if h, err := recordbatch.ParseHeader(p.Records); err == nil && h.Transactional() {
				transactional = true
			}
		}
	}
	// Transactional batches without a transactional id, or one the
	// principal may not WRITE, fail the whole request.
	if (transactional && req.TransactionID == nil) || (req.TransactionID != nil && !s.authorizeTxnID(r, authz.OpWrite, *req.TransactionID)) {
		if req.Acks == 0 {
			// Kafka's ProduceRequest.getErrorResponse is null for acks=0:
			// the connection is closed instead of answered.
			return nil, errors.New("transactional produce refused (no transactional id, or not authorized), acks=0")
		}
		return produceErrorResponse(req, resp, kerr.TransactionalIDAuthorizationFailed.Code), nil
	}

	validAcks := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	failed := false
	if resp.Topics == nil || cap(resp.Topics) < len(req.Topics) {
		resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	}
	respTopic := make(map[tpKey]int) // topic key (part 0) -> index in resp.Topics
	var waits []produceWait          // appends waiting for an fsync (produce_wait.go)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		tk := key(rt, 0)
		idx, ok := respTopic[tk]
		if !ok {
			idx = len(resp.Topics)
			respTopic[tk] = idx
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			st.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
			resp.Topics = append(resp.Topics, st)
		}
		var topic *partition.Topic
		if useIDs {
			topic = s.store.TopicByID(partition.TopicID(rt.TopicID))
		} else {
			topic = s.store.Topic(rt.Topic)
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if last[key(rt, rp.Partition)] != [2]int{ti, pi} {
				continue
			}
			sp := produceError(rp.Partition, s.topicAuthCodeOf(r, authz.OpWrite, topic, rt.Topic, useIDs))
			if sp.ErrorCode == 0 {
				sp = s.producePartition(r, req.TransactionID, validAcks, topic, rp, &waits, idx, len(resp.Topics[idx].Partitions))
			}
			if sp.ErrorCode != 0 {
				failed = true
			}
			resp.Topics[idx].Partitions = append(resp.Topics[idx].Partitions, sp)
		}
	}

	if len(waits) > 0 && req.Acks != 0 {
		// The connection waits, and may first serve the producer's next
		// request, whose batches the same fsyncs then cover. (The
		// closure takes a copy, so that waits itself stays off the
		// heap when nothing waits.)
		held := waits
		r.durable = func() { s.awaitAppends(r, resp, held) }
		return resp, nil
	}
	if s.awaitAppends(r, resp, waits) {
		failed = true
	}
	if req.Acks == 0 {
		if failed {
			return nil, errors.New("produce with acks=0 failed on some partition; closing the connection so the producer notices")
		}
		return nil, nil
	}
	return resp, nil
}

// produceErrorResponse answers every partition of req with code.
func produceErrorResponse(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, code int16) *kmsg.ProduceResponse {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			st.Partitions = append(st.Partitions, produceError(rp.Partition, code))
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func produceError(part int32, code int16) kmsg.ProduceResponseTopicPartition {
	sp := kmsg.NewProduceResponseTopicPartition()
	sp.Partition = part
	sp.ErrorCode = code
	sp.BaseOffset = -1
	sp.LogAppendTime = -1
	sp.LogStartOffset = -1
	return sp
}

// producePartition validates and appends one partition's batch. An append
// that waits for an fsync is added to waits, to be answered at
// resp.Topics[ti].Partitions[pi] (awaitAppends).
func (s *Server) producePartition(r *Request, txnID *string, validAcks bool, topic *partition.Topic, rp *kmsg.ProduceRequestTopicPartition,
	waits *[]produceWait, ti, pi int,
) kmsg.ProduceResponseTopicPartition {
	version := r.Version
	fail := func(code int16) kmsg.ProduceResponseTopicPartition { return produceError(rp.Partition, code) }
	if topic == nil {
		if version >= 13 {
			return fail(kerr.UnknownTopicID.Code)
		}
		return fail(kerr.UnknownTopicOrPartition.Code)
	}
	if rp.Partition < 0 || int(rp.Partition) >= len(topic.Partitions) {
		return fail(kerr.UnknownTopicOrPartition.Code)
	}
	if code := checkOneBatch(version, rp.Records); code != 0 {
		return fail(code)
	}
	if !validAcks {
		return fail(kerr.InvalidRequiredAcks.Code)
	}
	if topic.Internal && (r.ClientID == nil || *r.ClientID != adminClientID) {
		// ReplicaManager: only Kafka's own admin client may append to
		// __consumer_offsets and __transaction_state.
		return fail(kerr.InvalidTopicException.Code)
	}
	log := topic.Partitions[rp.Partition]
	batch := rp.Records
	h := recordbatch.Header(batch)
	// One snapshot of the partition's configuration serves the whole
	// produce, its checks and its append, as Kafka validates and appends
	// under one LogConfig.
	cfg := log.ConfigSnapshot()

	var guard *partition.TxnVerificationGuard
	if h.Transactional() && len(batch) >= recordbatch.HeaderSize {
		// Kafka verifies with the transaction coordinator that the
		// partition is part of the producer's ongoing transaction before
		// appending (KIP-890 part 1). The guard, taken first, makes the
		// append fail if the transaction ended in between.
		g := log.StartTxnVerification(h.ProducerID(), h.ProducerEpoch())
		guard = &g
		code := kerr.InvalidTxnState.Code
		switch {
		case txnID == nil:
		case version >= 12 && s.cfg.AddTxnPartition != nil:
			// transaction.version 2: the partition joins the
			// transaction here (Kafka's ADD_PARTITION for v12+).
			code = s.cfg.AddTxnPartition(*txnID, h.ProducerID(), h.ProducerEpoch(), topic.Name, rp.Partition)
		case s.cfg.VerifyTxnPartition != nil:
			code = s.cfg.VerifyTxnPartition(*txnID, h.ProducerID(), h.ProducerEpoch(), topic.Name, rp.Partition)
		}
		if code == kerr.TransactionAbortable.Code && version < 11 {
			// TRANSACTION_ABORTABLE is new in Produce v11 (KIP-890);
			// older clients get INVALID_TXN_STATE, as Kafka answers them.
			code = kerr.InvalidTxnState.Code
		}
		if code != 0 {
			return fail(code)
		}
	}

	// UnifiedLog's order: base offset, CRC, then max.message.bytes, all
	// before the records are looked at (and a too-large batch is never
	// decompressed).
	if len(batch) == h.Size() && h.Size() > int(cfg.MaxMessageBytes) {
		switch {
		case h.BaseOffset() != 0:
			return fail(kerr.InvalidRecord.Code)
		case h.CheckCRC() != nil:
			return fail(kerr.CorruptMessage.Code)
		}
		return fail(kerr.MessageTooLarge.Code)
	}
	// The batch is inflated once: Validate streams through gzip, lz4 and
	// zstd without holding the records, unless the topic's codec differs
	// and the records are kept for recompressing them.
	vopts := recordbatch.ValidateOptions{MaxDecompressed: s.cfg.MaxDecompressedBytes, OnInflate: s.inflated}
	codec := h.Codec()
	recompress := cfg.Recompress && cfg.StoreCodec != codec
	var kept []byte
	if recompress && codec != recordbatch.None {
		// The codec may cap kept's capacity at the inflated size, so the
		// pooled buffer itself is what goes back.
		buf := getBuf(min(4*len(batch), s.cfg.MaxDecompressedBytes))
		kept = buf[:0]
		vopts.Keep = &kept
		defer putBuf(buf)
	}
	sum, err := recordbatch.Validate(batch, vopts)
	if err != nil {
		s.log.Debug().Err(err).Str("topic", topic.Name).Int32("partition", rp.Partition).Msg("produce batch rejected")
		return fail(s.errorCode(err))
	}

	if code, recErrs, msg := s.checkRecords(topic.Name, cfg, rp.Partition, batch, sum); code != 0 {
		sp := fail(code)
		sp.LogStartOffset = log.Offsets().LogStartOffset
		sp.ErrorRecords = recErrs
		m := msg // only a rejected batch's message goes to the heap
		sp.ErrorMessage = &m
		return sp
	}

	// Kafka's LogValidator sets a CreateTime batch's maxTimestamp to the
	// largest record timestamp rather than trusting the producer's: the
	// time index, timestamp lookups, segment.ms and retention all read it.
	// (LogAppendTime topics are stamped by Append, which would redo the
	// CRC computed here.)
	if sum.Records > 0 && !h.LogAppendTime() && !cfg.LogAppendTime() {
		h.SetMaxTimestamp(sum.MaxTimestamp)
	}

	if recompress {
		rebuilt, err := recordbatch.Recompress(batch, kept, cfg.StoreCodec)
		if err != nil {
			return fail(s.errorCode(err))
		}
		batch = rebuilt
	}

	pend, err := log.AppendWithConfigPending(cfg, batch, guard)
	if err != nil {
		return s.appendFailed(r, topic.Name, rp.Partition, err)
	}
	if pend.NeedsSync() {
		*waits = append(*waits, produceWait{pend: pend, topic: topic.Name, part: rp.Partition, ti: ti, pi: pi})
		return produceError(rp.Partition, 0) // answered by awaitAppends
	}
	return s.appendAnswer(r, topic.Name, rp.Partition, &pend)
}

// checkOneBatch is Kafka's ProduceRequest.validateRecords for v3+: the
// records must be exactly one batch of magic 2, and zstd needs v7. Bytes
// that do not make up a second whole batch are left for Validate, which
// rejects them (Kafka ignores them).
func checkOneBatch(version int16, b []byte) int16 {
	// Kafka's ByteBufferLogInputStream: fewer bytes than a size prefix, or
	// than the size announces, is no batch; a batch length below the
	// smallest v0 message (14) is corrupt.
	const minBatchLength = 14
	batchSize := func(b []byte) (int64, int16) {
		if len(b) < recordbatch.LogOverhead {
			return 0, kerr.InvalidRecord.Code
		}
		n := int64(recordbatch.Header(b).BatchLength())
		if n < minBatchLength {
			return 0, kerr.CorruptMessage.Code
		}
		if n+recordbatch.LogOverhead > int64(len(b)) {
			return 0, kerr.InvalidRecord.Code
		}
		return n + recordbatch.LogOverhead, 0
	}
	size, code := batchSize(b)
	if code != 0 {
		return code
	}
	if recordbatch.Header(b).Magic() != recordbatch.Magic {
		return kerr.InvalidRecord.Code
	}
	if version < 7 && recordbatch.Header(b).Codec() == recordbatch.Zstd {
		return kerr.UnsupportedCompressionType.Code
	}
	if rest := b[size:]; len(rest) >= recordbatch.LogOverhead {
		if _, code := batchSize(rest); code != kerr.InvalidRecord.Code {
			// A second batch (INVALID_RECORD), or a corrupt one.
			if code == 0 {
				return kerr.InvalidRecord.Code
			}
			return code
		}
	}
	return 0
}

// checkRecords applies the topic's record rules: keys on compacted
// topics, and timestamps. Kafka reports one error per record, the key
// error first.
func (s *Server) checkRecords(topic string, cfg *partition.LogConfig, part int32, batch []byte, sum recordbatch.Summary,
) (code int16, recErrs []kmsg.ProduceResponseTopicPartitionErrorRecord, msg string) {
	compact := cfg.Compact()
	h := recordbatch.Header(batch)
	createTime := !cfg.LogAppendTime()
	// The timestamp bounds matter only for CreateTime topics.
	var now, before, after int64
	if createTime {
		now = s.clock.Now().UnixMilli()
		before, after = cfg.TimestampBounds()
	}
	outOfRange := func(ts int64) bool {
		diff := now - ts
		return diff > before || -diff > after
	}

	keyBad := compact && sum.NullKeyIndex >= 0
	tsSuspect := false
	switch {
	case createTime && h.LogAppendTime() && h.MaxTimestamp() == -1:
		tsSuspect = true // LogAppendTime set by the producer
	case createTime:
		tsSuspect = sum.Records > 0 && (outOfRange(sum.MinTimestamp) || outOfRange(sum.MaxTimestamp))
	case h.LogAppendTime():
		tsSuspect = true
	}
	if !keyBad && !tsSuspect {
		return 0, nil, ""
	}

	// Slow path, only for rejected (or suspect) batches: walk the records
	// to list each one's error as Kafka does. This inflates a compressed
	// batch a second time; such a batch is rarely written.
	tp := fmt.Sprintf("%s-%d", topic, part)
	s.noteInflate(h.Codec())
	anyTimestamp := false
	i := 0
	err := recordbatch.ForEachRecord(batch, s.cfg.MaxDecompressedBytes, func(rec recordbatch.Record) error {
		idx := i
		i++
		var m string
		ts := h.BaseTimestamp() + rec.TimestampDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp()
		}
		switch {
		case compact && rec.Key == nil:
			m = "Compacted topic cannot accept message without key in topic partition " + tp + "."
		case createTime && ts != -1:
			if outOfRange(ts) {
				m = fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
					ts, idx, satSub(now, before), satAdd(now, after))
				anyTimestamp = true
			}
		case h.LogAppendTime():
			m = fmt.Sprintf("Invalid timestamp type in message with offset %d. Producer should not set timestamp type to LogAppendTime.", idx)
			anyTimestamp = true
		}
		if m != "" {
			recErrs = append(recErrs, kmsg.ProduceResponseTopicPartitionErrorRecord{RelativeOffset: int32(idx), ErrorMessage: &m})
		}
		return nil
	})
	if err != nil {
		return s.errorCode(err), nil, err.Error()
	}
	if len(recErrs) == 0 {
		return 0, nil, ""
	}
	if anyTimestamp {
		return kerr.InvalidTimestamp.Code, recErrs, "One or more records have been rejected due to invalid timestamp"
	}
	shown := make([]string, 0, 3)
	for _, e := range recErrs[:min(3, len(recErrs))] {
		shown = append(shown, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.RelativeOffset, *e.ErrorMessage))
	}
	return kerr.InvalidRecord.Code, recErrs, fmt.Sprintf(
		"One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
		len(recErrs), strings.Join(shown, ", "))
}

func satSub(a, b int64) int64 {
	if b > 0 && a < -1<<63+b {
		return -1 << 63
	}
	return a - b
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}

// noteInflate tells the test seam Server.inflated that the produce path is
// about to inflate a batch compressed with c (nothing for None), where it
// calls recordbatch without ValidateOptions.OnInflate. (Recompress takes
// the records Validate kept and cannot inflate.)
func (s *Server) noteInflate(c recordbatch.Codec) {
	if c != recordbatch.None && s.inflated != nil {
		s.inflated()
	}
}
