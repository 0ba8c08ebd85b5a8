package main

// transactions_abort_hanging.go — the abort and find-hanging commands of samsa transactions
// (TransactionsCommand's AbortTransactionCommand and FindHangingTransactionsCommand).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// abortSpec is Kafka's AbortTransactionSpec.
type abortSpec struct {
	tp               topicPartition
	producerID       int64
	producerEpoch    int16
	coordinatorEpoch int32
}

func (s abortSpec) String() string {
	return fmt.Sprintf("AbortTransactionSpec(topicPartition=%s, producerId=%d, producerEpoch=%d, coordinatorEpoch=%d)",
		s.tp, s.producerID, s.producerEpoch, s.coordinatorEpoch)
}

func (t *txnTool) abort(ctx context.Context, o *txnOpts) error {
	tp := topicPartition{o.topic.v, int32(o.partition.v)}
	spec, err := t.buildAbortSpec(ctx, tp, o)
	if err != nil {
		return err
	}
	if err := t.abortTransaction(ctx, spec); err != nil {
		return failure("Failed to abort transaction "+spec.String(), err)
	}
	return nil
}

// buildAbortSpec is AbortTransactionCommand.execute's choice between --start-offset (the open
// transaction starting there, from DescribeProducers) and the explicit producer fields.
func (t *txnTool) buildAbortSpec(ctx context.Context, tp topicPartition, o *txnOpts) (abortSpec, error) {
	if !o.startOffset.set && !o.producerID.set {
		return abortSpec{}, errors.New("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) " +
			"or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
	}
	if !o.startOffset.set {
		if !o.producerEpoch.set {
			return abortSpec{}, errors.New("Missing required argument --producer-epoch")
		}
		if !o.coordEpoch.set {
			return abortSpec{}, errors.New("Missing required argument --coordinator-epoch")
		}
		// A transaction of a new producer id that hung before its first marker shows
		// coordinator epoch -1; 0 is at most any real coordinator epoch.
		return abortSpec{tp, o.producerID.v, int16(o.producerEpoch.v), max(int32(o.coordEpoch.v), 0)}, nil
	}
	res, err := t.describeProducers(ctx, []topicPartition{tp}, -1)
	if err != nil {
		return abortSpec{}, failure("Failed to validate producer state for partition "+tp.String(), err)
	}
	for _, p := range res[tp] {
		if p.CurrentTxnStartOffset >= 0 && p.CurrentTxnStartOffset == o.startOffset.v {
			return abortSpec{tp, p.ProducerID, int16(p.ProducerEpoch), coordinatorEpochOrElse(p.CoordinatorEpoch, 0)}, nil
		}
	}
	return abortSpec{}, fmt.Errorf("Could not find any open transactions starting at offset %d on partition %s", o.startOffset.v, tp)
}

// abortTransaction is Admin.abortTransaction (AbortTransactionHandler): WriteTxnMarkers with
// one ABORT marker for the partition, sent to its leader, found again after a leader move.
func (t *txnTool) abortTransaction(ctx context.Context, spec abortSpec) error {
	var lastErr error
	for {
		leaders, err := t.leaders(ctx, []topicPartition{spec.tp})
		if err != nil {
			return err
		}
		leader := leaders[spec.tp]
		if leader < 0 {
			lastErr = kerr.LeaderNotAvailable
		} else {
			code, err := t.sendAbortMarker(ctx, leader, spec)
			if err != nil {
				if ctx.Err() != nil {
					return firstErr(lastErr, err)
				}
				var ae *adminError
				if errors.As(err, &ae) {
					return err
				}
				lastErr = err
			} else {
				switch code {
				case nil:
					return nil
				case kerr.ClusterAuthorizationFailed:
					return &adminError{code, "WriteTxnMarkers request with " + spec.String() + " failed due to cluster authorization error"}
				case kerr.InvalidProducerEpoch:
					return &adminError{code, "WriteTxnMarkers request with " + spec.String() + " failed due an invalid producer epoch"}
				case kerr.TransactionCoordinatorFenced:
					return &adminError{code, fmt.Sprintf("WriteTxnMarkers request with %s failed since the provided coordinator epoch %d has been fenced by the active coordinator", spec, spec.coordinatorEpoch)}
				case kerr.NotLeaderForPartition, kerr.ReplicaNotAvailable, kerr.BrokerNotAvailable, kerr.UnknownTopicOrPartition:
					lastErr = code
				default:
					return &adminError{code, "WriteTxnMarkers request with " + spec.String() + " failed due to unexpected error: " + code.Description}
				}
			}
		}
		if err := t.sleep(ctx); err != nil {
			return firstErr(lastErr, err)
		}
	}
}

// sendAbortMarker sends the marker to broker and returns the partition's error (nil: written).
func (t *txnTool) sendAbortMarker(ctx context.Context, broker int32, spec abortSpec) (*kerr.Error, error) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = spec.producerID, spec.producerEpoch, false, spec.coordinatorEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = spec.tp.topic, []int32{spec.tp.partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	kresp, err := t.cl.Broker(int(broker)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != spec.producerID {
		return nil, &adminError{kerr.UnknownServerError, fmt.Sprintf("WriteTxnMarkers response included unexpected marker entries (expected to find exactly one entry with producerId %d)", spec.producerID)}
	}
	topics := resp.Markers[0].Topics
	if len(topics) != 1 || topics[0].Topic != spec.tp.topic {
		return nil, &adminError{kerr.UnknownServerError, fmt.Sprintf("WriteTxnMarkers response included unexpected topic entries (expected to find exactly one entry with topic partition %s)", spec.tp)}
	}
	parts := topics[0].Partitions
	if len(parts) != 1 || parts[0].Partition != spec.tp.partition {
		return nil, &adminError{kerr.UnknownServerError, fmt.Sprintf("WriteTxnMarkers response included unexpected partition entries for topic %s (expected to find exactly one entry with partition %d)", spec.tp.topic, spec.tp.partition)}
	}
	if parts[0].ErrorCode == 0 {
		return nil, nil
	}
	return kerr.TypedErrorForCode(parts[0].ErrorCode), nil
}

// ---- find-hanging ----

var findHangingHeaders = []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)"}

// findHangingBatch is FindHangingTransactionsCommand.MAX_BATCH_SIZE: topics described and
// partitions sent per DescribeProducers round.
const findHangingBatch = 500

// openTransaction is an open transaction on a partition, from DescribeProducers.
type openTransaction struct {
	tp       topicPartition
	producer activeProducer
}

func (t *txnTool) findHanging(ctx context.Context, o *txnOpts) error {
	if !o.topic.set && !o.brokerID.set {
		return errors.New("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
	}
	if o.partition.set && !o.topic.set {
		return errors.New("The --partition argument requires --topic to be provided")
	}
	broker := int32(-1)
	if o.brokerID.set {
		broker = int32(o.brokerID.v)
	}
	maxTimeout := time.Duration(o.maxTxnTimeoutMin) * time.Minute
	tps, err := t.partitionsToSearch(ctx, o, broker)
	if err != nil {
		return err
	}
	var candidates []openTransaction
	for i := 0; i < len(tps); i += findHangingBatch {
		batch := tps[i:min(i+findHangingBatch, len(tps))]
		res, err := t.describeProducers(ctx, batch, broker)
		if err != nil {
			opt := "Optional.empty"
			if broker >= 0 {
				opt = fmt.Sprintf("Optional[%d]", broker)
			}
			return failure(fmt.Sprintf("Failed to describe producers for %d partitions on broker %s", len(batch), opt), err)
		}
		candidates = append(candidates, candidateOpenTransactions(res, t.now(), maxTimeout)...)
	}
	var hanging []openTransaction
	if len(candidates) > 0 {
		pids := map[int64]bool{}
		var pidList []int64
		for _, c := range candidates {
			if !pids[c.producer.ProducerID] {
				pids[c.producer.ProducerID] = true
				pidList = append(pidList, c.producer.ProducerID)
			}
		}
		listed, err := t.listTransactions(ctx, pidList)
		if err != nil {
			return failure(fmt.Sprintf("Failed to list transactions for %d producers", len(pidList)), err)
		}
		txnIDs := map[int64]string{}
		for _, l := range listed {
			if pids[l.ProducerID] { // a listing for a producer not asked about is ignored
				txnIDs[l.ProducerID] = l.TxnID
			}
		}
		var ids []string
		seen := map[string]bool{}
		for _, id := range txnIDs {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		descriptions := map[string]kadm.DescribedTransaction{}
		if len(ids) > 0 {
			if descriptions, err = t.describeTransactions(ctx, ids); err != nil {
				return failure(fmt.Sprintf("Failed to describe %d transactions", len(ids)), err)
			}
		}
		hanging = filterHangingTransactions(candidates, txnIDs, descriptions)
	}
	fmt.Fprint(t.out, formatHangingTransactions(hanging, t.now()))
	return nil
}

// partitionsToSearch is collectTopicPartitionsToSearch: the partition given, or the partitions
// of the topic (of every non-internal topic without --topic) with a replica on broker.
func (t *txnTool) partitionsToSearch(ctx context.Context, o *txnOpts, broker int32) ([]topicPartition, error) {
	if o.topic.set && o.partition.set {
		return []topicPartition{{o.topic.v, int32(o.partition.v)}}, nil
	}
	var topics []string
	if o.topic.set {
		topics = []string{o.topic.v}
	} else {
		listed, err := t.adm.ListTopics(ctx) // Admin.listTopics() leaves internal topics out
		if err != nil {
			return nil, failure("Failed to list topics", err)
		}
		topics = listed.Names()
	}
	var tps []topicPartition
	for i := 0; i < len(topics); i += findHangingBatch {
		batch := topics[i:min(i+findHangingBatch, len(topics))]
		md, err := t.adm.Metadata(ctx, batch...)
		if err == nil {
			err = md.Topics.Error()
		}
		if err != nil {
			return nil, failure(fmt.Sprintf("Failed to describe %d topics", len(batch)), err)
		}
		for _, td := range md.Topics.Sorted() {
			for _, pd := range td.Partitions.Sorted() {
				if broker < 0 || containsInt32(pd.Replicas, broker) {
					tps = append(tps, topicPartition{td.Topic, pd.Partition})
				}
			}
		}
	}
	return tps, nil
}

func containsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// candidateOpenTransactions keeps the open transactions whose producer last wrote more than
// maxTimeout ago: no coordinator would still let such a transaction run.
func candidateOpenTransactions(res map[topicPartition][]activeProducer, now time.Time, maxTimeout time.Duration) []openTransaction {
	var out []openTransaction
	tps := make([]topicPartition, 0, len(res))
	for p := range res {
		tps = append(tps, p)
	}
	sortTopicPartitions(tps)
	for _, p := range tps {
		for _, ap := range res[p] {
			if ap.CurrentTxnStartOffset >= 0 && now.UnixMilli()-ap.LastTimestamp > maxTimeout.Milliseconds() {
				out = append(out, openTransaction{p, ap})
			}
		}
	}
	return out
}

// filterHangingTransactions is filterHangingTransactions: an open transaction hangs when its
// producer id has no transactional id at any coordinator, the id is not found, or the
// coordinator's transaction does not include the partition (so no marker will come).
func filterHangingTransactions(candidates []openTransaction, txnIDs map[int64]string, descriptions map[string]kadm.DescribedTransaction) []openTransaction {
	var out []openTransaction
	for _, c := range candidates {
		id, ok := txnIDs[c.producer.ProducerID]
		if !ok {
			out = append(out, c)
			continue
		}
		d, ok := descriptions[id]
		if !ok {
			out = append(out, c)
			continue
		}
		if _, ok := d.Topics[c.tp.topic][c.tp.partition]; !ok {
			out = append(out, c)
		}
	}
	return out
}

func formatHangingTransactions(hanging []openTransaction, now time.Time) string {
	rows := make([][]string, 0, len(hanging))
	for _, h := range hanging {
		p := h.producer
		rows = append(rows, []string{h.tp.topic, strconv.Itoa(int(h.tp.partition)), strconv.FormatInt(p.ProducerID, 10),
			strconv.Itoa(int(p.ProducerEpoch)), strconv.Itoa(int(coordinatorEpochOrElse(p.CoordinatorEpoch, -1))),
			strconv.FormatInt(max(p.CurrentTxnStartOffset, -1), 10), strconv.FormatInt(p.LastTimestamp, 10),
			strconv.FormatInt((now.UnixMilli()-p.LastTimestamp)/60000, 10)})
	}
	var b strings.Builder
	prettyPrintTable(&b, findHangingHeaders, rows)
	return b.String()
}
