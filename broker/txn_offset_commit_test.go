package broker

// TxnOffsetCommit (28) on the data env: its round-trip builder, and transactional offsets
// kept pending until WriteTxnMarkers reaches __consumer_offsets, with OffsetFetch's
// require_stable answers, the KIP-890 verification of the offsets partition, and a reload
// of the offsets partition from the log with its markers.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// approveOnce approves one verification and then puts the previous verifier back, so a
// round-trip builder leaves the env as it found it.
type approveOnce struct {
	rm   *ReplicaManager
	prev txnVerifier
}

func (v *approveOnce) verify(context.Context, string, int64, int16, []logstore.TopicPartition) map[logstore.TopicPartition]int16 {
	v.rm.verifier = v.prev
	return nil
}

func (v *approveOnce) shutdown() {}

func txnOffsetCommitRequest(group, txnID string, pid int64, epoch int16, offsets map[string]map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, group, pid, epoch
	req.Generation, req.MemberID = -1, ""
	for topic, parts := range offsets {
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic
		for p, o := range parts {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			md := "txn"
			rp.Partition, rp.Offset, rp.Metadata, rp.LeaderEpoch = p, o, &md, 1
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func init() {
	requestBuilders[28] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			groupsReady(e)
			// A producer of its own per version, so each first append is verified (once).
			e.rm.verifier = &approveOnce{rm: e.rm, prev: e.rm.verifier}
			return txnOffsetCommitRequest("rt-txn-group", "rt-txn", 7000+int64(v), 0, map[string]map[int32]int64{"rt": {0: int64(v) + 1}})
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.TxnOffsetCommitResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("txn offset commit response %+v", resp)
			}
			expectCode(t, "txn offset commit", resp.Topics[0].Partitions[0].ErrorCode, nil)
		},
	}
}

// txnCommitCodes sends TxnOffsetCommit and returns topic -> partition -> error code.
func txnCommitCodes(t *testing.T, e *dataEnv, v int16, req *kmsg.TxnOffsetCommitRequest) map[string]map[int32]int16 {
	t.Helper()
	req.SetVersion(v)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatalf("txn offset commit: %v", err)
	}
	out := map[string]map[int32]int16{}
	for _, rt := range resp.(*kmsg.TxnOffsetCommitResponse).Topics {
		out[rt.Topic] = map[int32]int16{}
		for _, p := range rt.Partitions {
			out[rt.Topic][p.Partition] = p.ErrorCode
		}
	}
	return out
}

// stableFetch runs OffsetFetch for group's topic partitions at version v with require_stable
// and returns partition -> (offset, code), plus the group-level code.
func stableFetch(t *testing.T, e *dataEnv, v int16, group, topic string, parts ...int32) (map[int32][2]int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(v)
	req.RequireStable = v >= 7
	out := map[int32][2]int64{}
	if v >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, parts
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp, err := e.handle(req)
		if err != nil {
			t.Fatalf("offset fetch: %v", err)
		}
		rg := resp.(*kmsg.OffsetFetchResponse).Groups[0]
		for _, rt := range rg.Topics {
			for _, p := range rt.Partitions {
				out[p.Partition] = [2]int64{p.Offset, int64(p.ErrorCode)}
			}
		}
		return out, rg.ErrorCode
	}
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	r := resp.(*kmsg.OffsetFetchResponse)
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			out[p.Partition] = [2]int64{p.Offset, int64(p.ErrorCode)}
		}
	}
	return out, r.ErrorCode
}

func TestTxnOffsetCommitThroughMarkers(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("t", 2)
	groupsReady(e)
	f := &fakeVerifier{codes: map[logstore.TopicPartition]int16{}}
	e.rm.verifier = f
	const group, txnID = "txn-group", "txn-id"
	unstable := int64(kerr.UnstableOffsetCommit.Code)

	// Pending: an unknown partition is refused on its own; the verification asked the
	// transaction coordinator about the group's offsets partition.
	codes := txnCommitCodes(t, e, 3, txnOffsetCommitRequest(group, txnID, 9001, 0, map[string]map[int32]int64{"t": {0: 10}, "nope": {0: 1}}))
	expectCode(t, "t-0", codes["t"][0], nil)
	expectCode(t, "nope-0", codes["nope"][0], kerr.UnknownTopicOrPartition)
	if len(f.calls) != 1 || f.calls[0] != txnID+"/9001/0/[__consumer_offsets-0]" {
		t.Fatalf("verifications %v", f.calls)
	}
	for _, v := range []int16{7, 8} {
		got, top := stableFetch(t, e, v, group, "t", 0)
		if top != 0 || got[0] != [2]int64{-1, unstable} {
			t.Fatalf("v%d require_stable while pending: group %d, t-0 %v", v, top, got[0])
		}
	}
	if got, _ := stableFetch(t, e, 6, group, "t", 0); got[0] != [2]int64{-1, 0} {
		t.Fatalf("v6 while pending: %v", got[0])
	}
	// The same transaction commits another partition: no second verification (the
	// producer's transaction is open in the offsets partition).
	codes = txnCommitCodes(t, e, 2, txnOffsetCommitRequest(group, txnID, 9001, 0, map[string]map[int32]int64{"t": {1: 11}}))
	expectCode(t, "t-1", codes["t"][1], nil)
	if len(f.calls) != 1 {
		t.Fatalf("verifications %v", f.calls)
	}

	if got := writeMarker(t, e, 9001, 0, true, 0, GroupMetadataTopicName, 0); got[0] != 0 {
		t.Fatalf("commit marker: %v", got)
	}
	got, _ := stableFetch(t, e, 7, group, "t", 0, 1)
	if got[0] != [2]int64{10, 0} || got[1] != [2]int64{11, 0} {
		t.Fatalf("after the commit marker: %v", got)
	}

	// Another producer's transaction aborts: its offset never shows.
	codes = txnCommitCodes(t, e, 1, txnOffsetCommitRequest(group, "other", 9002, 0, map[string]map[int32]int64{"t": {0: 20}}))
	expectCode(t, "abort txn t-0", codes["t"][0], nil)
	if got := writeMarker(t, e, 9002, 0, false, 0, GroupMetadataTopicName, 0); got[0] != 0 {
		t.Fatalf("abort marker: %v", got)
	}
	if got, _ := stableFetch(t, e, 7, group, "t", 0); got[0] != [2]int64{10, 0} {
		t.Fatalf("after the abort marker: %v", got[0])
	}

	// A third producer leaves its transaction open.
	codes = txnCommitCodes(t, e, 3, txnOffsetCommitRequest(group, "open", 9003, 0, map[string]map[int32]int64{"t": {1: 30}}))
	expectCode(t, "open txn t-1", codes["t"][1], nil)

	// Verification refused (no AddOffsetsToTxn): INVALID_TXN_STATE, nothing pending.
	f.mu.Lock()
	f.codes[logstore.TopicPartition{Topic: GroupMetadataTopicName, Partition: 0}] = kerr.InvalidTxnState.Code
	f.mu.Unlock()
	codes = txnCommitCodes(t, e, 3, txnOffsetCommitRequest(group, "unadded", 9004, 0, map[string]map[int32]int64{"t": {0: 40}}))
	expectCode(t, "unverified t-0", codes["t"][0], kerr.InvalidTxnState)

	// The offsets partition reloads from its log: committed, aborted and open transactions
	// come back as they were.
	c := e.apis.groupCoordinator()
	tp := logstore.TopicPartition{Topic: GroupMetadataTopicName, Partition: 0}
	c.OnResignation(0)
	c.OnElection(0, e.epochs[tp]-1)
	groupsReady(e)
	got, _ = stableFetch(t, e, 7, group, "t", 0, 1)
	if got[0] != [2]int64{10, 0} || got[1] != [2]int64{-1, unstable} {
		t.Fatalf("after reload: %v", got)
	}
	if got := writeMarker(t, e, 9003, 0, true, 0, GroupMetadataTopicName, 0); got[0] != 0 {
		t.Fatalf("late commit marker: %v", got)
	}
	if got, _ := stableFetch(t, e, 8, group, "t", 1); got[1] != [2]int64{30, 0} {
		t.Fatalf("after the late commit marker: %v", got[1])
	}
}

// With transaction.partition.verification.enable=false the offsets partition is not
// verified: the transactional batch is appended at once and its marker applies it.
func TestTxnOffsetCommitWithoutVerification(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("t", 1)
	groupsReady(e)
	withoutVerification(e)
	f := &fakeVerifier{codes: map[logstore.TopicPartition]int16{
		{Topic: GroupMetadataTopicName, Partition: 0}: kerr.InvalidTxnState.Code}}
	e.rm.verifier = f
	codes := txnCommitCodes(t, e, 3, txnOffsetCommitRequest("g", "x", 9100, 2, map[string]map[int32]int64{"t": {0: 5}}))
	expectCode(t, "t-0", codes["t"][0], nil)
	if len(f.calls) != 0 {
		t.Fatalf("verified with verification disabled: %v", f.calls)
	}
	if got := writeMarker(t, e, 9100, 2, true, 0, GroupMetadataTopicName, 0); got[0] != 0 {
		t.Fatalf("commit marker: %v", got)
	}
	if got, _ := stableFetch(t, e, 7, "g", "t", 0); got[0] != [2]int64{5, 0} {
		t.Fatalf("after the commit marker: %v", got[0])
	}
}

// franz-go's GroupTransactSession on three brokers: consume-transform-produce with the
// group's offsets committed in the producer's transactions (AddOffsetsToTxn, TxnOffsetCommit
// verified by the transaction coordinator, markers on __consumer_offsets); an aborted
// transaction leaves the committed offsets where they were.
func TestTxnClusterGroupTransactSession(t *testing.T) {
	if _, _, ok := SupportedVersions(27); !ok {
		t.Fatal("WriteTxnMarkers (API 27) is not served by this build")
	}
	c := startTxnCluster(t, "gts")
	tc := adminDial(t, c.brokers[1].Addr("PLAINTEXT"))
	for _, topic := range []string{"gts-in", "gts-out"} {
		cresp := tc.request(adminCreateTopicsReq(15000, false, adminTopic(topic, 2, 3)), 7).(*kmsg.CreateTopicsResponse)
		adminWantCode(t, "create "+topic, cresp.Topics[0].ErrorCode, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("gts-in"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(100))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(prefix string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	produce("a", 10)

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID("gts"),
		kgo.TransactionTimeout(60*time.Second), kgo.ConsumerGroup("gts-group"), kgo.ConsumeTopics("gts-in"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(), kgo.DefaultProduceTopic("gts-out"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(100), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	// copyRound consumes what is there, copies it and ends the transaction; it returns how
	// many records it copied.
	copyRound := func(commit kgo.TransactionEndTry) int {
		t.Helper()
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := sess.PollFetches(pctx)
		pcancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil && !(commit == kgo.TryAbort && errors.Is(err, kgo.ErrAborting)) {
					t.Errorf("copy produce: %v", err)
				}
			})
		})
		committed, err := sess.End(ctx, commit)
		if err != nil {
			t.Fatalf("end transaction: %v", err)
		}
		if commit == kgo.TryCommit && n > 0 && !committed {
			t.Logf("transaction of %d records aborted by the session (rebalance); retrying", n)
			return 0
		}
		return n
	}
	copied := 0
	deadline := time.Now().Add(60 * time.Second)
	for copied < 10 && time.Now().Before(deadline) {
		copied += copyRound(kgo.TryCommit)
	}
	if copied != 10 {
		t.Fatalf("copied %d records, want 10", copied)
	}

	// groupOffsets waits until OffsetFetch with require_stable answers both partitions
	// without UNSTABLE_OFFSET_COMMIT (the markers of the last transaction may still be on
	// their way when EndTxn returns) and their offsets add up to want.
	groupOffsets := func(what string, want int64) {
		t.Helper()
		var last map[int32]int64
		adminWaitFor(t, 30*time.Second, what, func() bool {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.RequireStable = true
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "gts-group"
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = "gts-in", []int32{0, 1}
			g.Topics = append(g.Topics, gt)
			req.Groups = append(req.Groups, g)
			resp, err := req.RequestWith(ctx, prod)
			if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
				return false
			}
			last = map[int32]int64{}
			for _, rt := range resp.Groups[0].Topics {
				for _, p := range rt.Partitions {
					if p.ErrorCode != 0 {
						return false
					}
					last[p.Partition] = p.Offset
				}
			}
			return last[0]+last[1] == want
		})
	}
	groupOffsets("offsets of the committed copies", 10)

	// An aborted copy moves nothing: the offsets stay, and the records are copied again.
	produce("b", 4)
	aborted := 0
	for aborted == 0 && time.Now().Before(deadline) {
		aborted = copyRound(kgo.TryAbort)
	}
	groupOffsets("offsets unchanged by the aborted copy", 10)
	for copied < 14 && time.Now().Before(deadline) {
		copied += copyRound(kgo.TryCommit)
	}
	groupOffsets("offsets of the last copies", 14)

	// read_committed sees each input record once in gts-out.
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("gts-out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	n := 0
	for n < 14 && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
		pcancel()
	}
	if n != 14 || len(seen) != 14 {
		t.Fatalf("read_committed saw %d records, %d distinct: %v", n, len(seen), seen)
	}
}

// The transaction coordinator's verification answers for the offsets partition reach
// TxnOffsetCommit as Kafka 3.7.1 translates them on the group path
// (ReplicaManager.maybeStartTransactionVerificationForPartitions, then
// GroupMetadataManager.maybeConvertOffsetCommitError): a failed round trip
// (NETWORK_EXCEPTION) is COORDINATOR_LOAD_IN_PROGRESS, not the produce path's
// NOT_ENOUGH_REPLICAS (which the group maps to COORDINATOR_NOT_AVAILABLE); the
// coordinator's retriable errors are COORDINATOR_NOT_AVAILABLE; INVALID_TXN_STATE and a
// fenced producer's INVALID_PRODUCER_EPOCH pass through. v0-1 see COORDINATOR_NOT_AVAILABLE
// for COORDINATOR_LOAD_IN_PROGRESS.
func TestTxnOffsetCommitVerificationErrors(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("t", 1)
	groupsReady(e)
	offsetsTP := logstore.TopicPartition{Topic: GroupMetadataTopicName, Partition: 0}
	for i, tc := range []struct {
		coordinator *kerr.Error
		version     int16
		want        *kerr.Error
	}{
		{kerr.NetworkException, 3, kerr.CoordinatorLoadInProgress},
		{kerr.NetworkException, 1, kerr.CoordinatorNotAvailable},
		{kerr.ConcurrentTransactions, 3, kerr.CoordinatorNotAvailable},
		{kerr.CoordinatorLoadInProgress, 3, kerr.CoordinatorNotAvailable},
		{kerr.NotCoordinator, 3, kerr.CoordinatorNotAvailable},
		{kerr.CoordinatorNotAvailable, 3, kerr.CoordinatorNotAvailable},
		{kerr.InvalidTxnState, 3, kerr.InvalidTxnState},
		{kerr.InvalidProducerEpoch, 3, kerr.InvalidProducerEpoch},
	} {
		t.Run(fmt.Sprintf("%s_v%d", tc.coordinator.Message, tc.version), func(t *testing.T) {
			e.rm.verifier = &fakeVerifier{codes: map[logstore.TopicPartition]int16{offsetsTP: tc.coordinator.Code}}
			pid := 9500 + int64(i)
			codes := txnCommitCodes(t, e, tc.version, txnOffsetCommitRequest("verr", "verr-txn", pid, 0, map[string]map[int32]int64{"t": {0: 3}}))
			expectCode(t, "t-0", codes["t"][0], tc.want)
			if got, _ := stableFetch(t, e, 7, "verr", "t", 0); got[0] != [2]int64{-1, 0} {
				t.Fatalf("an unverified commit left offsets behind: %v", got[0])
			}
		})
	}
}
