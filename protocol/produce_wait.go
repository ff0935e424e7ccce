package protocol

import (
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
)

// Waiting for flushes. With flush.messages due (log.flush.interval.messages=1:
// an fsync before each append is acknowledged), a Produce writes every
// partition's batch first and then waits for their fsyncs together:
// each partition is its own files and its own fsync, so run one after the
// other they would cost a request one fsync per partition. Within a
// partition, appends from every connection share one fsync (the log's
// group commit, partition.Log.syncTo).

// produceWait is a written append waiting for its fsync, and where its
// answer goes: resp.Topics[ti].Partitions[pi].
type produceWait struct {
	pend   partition.PendingAppend
	topic  string
	part   int32
	ti, pi int
}

// awaitAppends waits for every append of waits, at once, and writes each
// one's answer into resp; it reports whether any of them failed.
func (s *Server) awaitAppends(r *Request, resp *kmsg.ProduceResponse, waits []produceWait) (failed bool) {
	if len(waits) == 0 {
		return false // before making answer: a closure goroutines share escapes to the heap
	}
	answer := func(w *produceWait) {
		resp.Topics[w.ti].Partitions[w.pi] = s.appendAnswer(r, w.topic, w.part, &w.pend)
	}
	switch len(waits) {
	case 1:
		answer(&waits[0])
	default:
		var wg sync.WaitGroup
		var mu sync.Mutex
		var panicked any
		wg.Add(len(waits) - 1)
		for i := 1; i < len(waits); i++ {
			go func(w *produceWait) {
				defer wg.Done()
				defer func() {
					if p := recover(); p != nil {
						mu.Lock()
						panicked = p
						mu.Unlock()
					}
				}()
				answer(w)
			}(&waits[i])
		}
		answer(&waits[0])
		wg.Wait()
		if panicked != nil {
			panic(panicked) // for the connection's recovery, as in the handler
		}
	}
	for i := range waits {
		if resp.Topics[waits[i].ti].Partitions[waits[i].pi].ErrorCode != 0 {
			failed = true
		}
	}
	return failed
}

// appendAnswer waits for a written append and answers its partition.
func (s *Server) appendAnswer(r *Request, topic string, part int32, p *partition.PendingAppend) kmsg.ProduceResponseTopicPartition {
	res, err := p.Wait()
	if err != nil {
		return s.appendFailed(r, topic, part, err)
	}
	sp := kmsg.NewProduceResponseTopicPartition()
	sp.Partition = part
	// A duplicate of one of the producer's last five batches gets the
	// original's base offset, its timestamp as the log append time, and
	// nothing is written (UnifiedLog.append).
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	return sp
}

// appendFailed answers a partition whose append failed with err.
func (s *Server) appendFailed(r *Request, topic string, part int32, err error) kmsg.ProduceResponseTopicPartition {
	r.logStorageError(err, topic, part)
	sp := produceError(part, s.errorCode(err))
	if !errors.Is(err, partition.ErrRecordTooLarge) && !errors.Is(err, partition.ErrCorruptBatch) {
		sp.ErrorMessage = errorMessage(err)
	}
	return sp
}
