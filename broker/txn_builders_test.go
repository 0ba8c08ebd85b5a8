package broker

// Request builders for the transaction coordinator's keys (24, 25, 26, 65, 66) in
// TestEveryAdvertisedVersionRoundTrips, and handler-level tests on the data env:
// FindCoordinator key type 1 and the creation of __transaction_state, InitProducerId with a
// transactional id, and Kafka's PRODUCER_FENCED → INVALID_PRODUCER_EPOCH mapping for old
// request versions.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// txnReady makes the data env's broker lead a one-partition __transaction_state
// (transaction.state.log.num.partitions=1), with producer ids from a fake controller, and
// waits until the transaction coordinator loaded it.
func txnReady(e *dataEnv) {
	e.t.Helper()
	tp := logstore.TopicPartition{Topic: TransactionStateTopicName, Partition: 0}
	if e.parts[TransactionStateTopicName] == 0 {
		// A coordinator started before the topic existed has the default partition count.
		e.apis.ShutdownTxnCoordinator()
		e.cfg.Props["transaction.state.log.num.partitions"] = "1"
		withFakeProducerIDs(e)
		e.createTopic(TransactionStateTopicName, 1)
		e.t.Cleanup(e.apis.ShutdownTxnCoordinator)
		e.apis.OnTxnStateLeadershipChange(tp, true, e.epochs[tp]-1)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, code, _ := e.apis.txnCoordinator().ListTransactions(nil, nil)
		if code == 0 {
			return
		}
		if code != kerr.CoordinatorLoadInProgress.Code || time.Now().After(deadline) {
			e.t.Fatalf("transaction state partition not loaded: error %d (%v)", code, kerr.ErrorForCode(code))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// txnRequest runs req at version v through the dispatcher.
func txnRequest(e *dataEnv, req kmsg.Request, v int16) kmsg.Response {
	e.t.Helper()
	req.SetVersion(v)
	resp, err := e.handle(req)
	if err != nil {
		e.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	return resp
}

// retriableTxnCode reports the codes a transactional client retries on.
func retriableTxnCode(code int16) bool {
	switch code {
	case kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code, kerr.CoordinatorNotAvailable.Code:
		return true
	}
	return false
}

// txnInit is a producer's InitProducerId (v4) for transactional id, retried as clients do.
func txnInit(e *dataEnv, id string) (int64, int16) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp := txnRequest(e, req, 4).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode == 0 {
			return resp.ProducerID, resp.ProducerEpoch
		}
		if !retriableTxnCode(resp.ErrorCode) || time.Now().After(deadline) {
			e.t.Fatalf("InitProducerId %s: error %d (%v)", id, resp.ErrorCode, kerr.ErrorForCode(resp.ErrorCode))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// txnAddPartitions adds topic's partitions to id's transaction at version v (< 4) and
// returns the error code of each partition.
func txnAddPartitions(e *dataEnv, v int16, id string, pid int64, epoch int16, topic string, parts ...int32) map[int32]int16 {
	e.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := txnRequest(e, req, v).(*kmsg.AddPartitionsToTxnResponse)
	out := map[int32]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

func init() {
	requestBuilders[24] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			txnReady(e)
			id := fmt.Sprintf("rt-add-%d", v)
			pid, epoch := txnInit(e, id)
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			if v < 4 {
				req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic, rt.Partitions = "rt", []int32{0, 1}
				req.Topics = append(req.Topics, rt)
				return req
			}
			// v4, as partition leaders send it: one transaction added, one only verified.
			vid := "rt-add-verify"
			vpid, vepoch := txnInit(e, vid)
			if got := txnAddPartitions(e, 3, vid, vpid, vepoch, "rt", 1); got[1] != 0 {
				e.t.Fatalf("add partition before verification: %v", got)
			}
			for _, x := range []struct {
				id     string
				pid    int64
				epoch  int16
				verify bool
				p      int32
			}{{id, pid, epoch, false, 0}, {vid, vpid, vepoch, true, 1}} {
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = x.id, x.pid, x.epoch, x.verify
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic, tt.Partitions = "rt", []int32{x.p}
				tx.Topics = append(tx.Topics, tt)
				req.Transactions = append(req.Transactions, tx)
			}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.AddPartitionsToTxnResponse)
			n := 0
			for _, rt := range resp.Topics {
				for _, p := range rt.Partitions {
					expectCode(t, "add partitions", p.ErrorCode, nil)
					n++
				}
			}
			for _, tx := range resp.Transactions {
				for _, rt := range tx.Topics {
					for _, p := range rt.Partitions {
						expectCode(t, "add partitions "+tx.TransactionalID, p.ErrorCode, nil)
						n++
					}
				}
			}
			expectCode(t, "add partitions", resp.ErrorCode, nil)
			if n != 2 {
				t.Fatalf("add partitions: %d partition results, want 2: %+v", n, resp)
			}
		},
	}
	requestBuilders[25] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			txnReady(e)
			id := fmt.Sprintf("rt-add-offsets-%d", v)
			pid, epoch := txnInit(e, id)
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, "rt-group"
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			expectCode(t, "add offsets", r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
		},
	}
	requestBuilders[26] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			txnReady(e)
			id := fmt.Sprintf("rt-end-%d", v)
			pid, epoch := txnInit(e, id)
			if got := txnAddPartitions(e, 3, id, pid, epoch, "rt", 0); got[0] != 0 {
				e.t.Fatalf("add partition: %v", got)
			}
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, v%2 == 0
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			expectCode(t, "end txn", r.(*kmsg.EndTxnResponse).ErrorCode, nil)
		},
	}
	requestBuilders[65] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			txnReady(e)
			txnInit(e, "rt-describe")
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{"rt-describe", "rt-never-initialized"}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DescribeTransactionsResponse)
			if len(resp.TransactionStates) != 2 {
				t.Fatalf("describe transactions: %+v", resp)
			}
			st := resp.TransactionStates[0]
			expectCode(t, "describe rt-describe", st.ErrorCode, nil)
			if st.TransactionalID != "rt-describe" || st.State != "Empty" || st.ProducerID < 0 || st.TimeoutMillis != 60000 {
				t.Fatalf("describe rt-describe: %+v", st)
			}
			expectCode(t, "describe unknown id", resp.TransactionStates[1].ErrorCode, kerr.TransactionalIDNotFound)
		},
	}
	requestBuilders[66] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			txnReady(e)
			txnInit(e, "rt-list")
			req := kmsg.NewPtrListTransactionsRequest()
			req.StateFilters = []string{"Empty", "NoSuchState"}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.ListTransactionsResponse)
			expectCode(t, "list transactions", resp.ErrorCode, nil)
			if !slices.Equal(resp.UnknownStateFilters, []string{"NoSuchState"}) {
				t.Fatalf("unknown state filters %v", resp.UnknownStateFilters)
			}
			found := false
			for _, st := range resp.TransactionStates {
				if st.TransactionState != "Empty" {
					t.Fatalf("state filter Empty listed %+v", st)
				}
				found = found || st.TransactionalID == "rt-list"
			}
			if !found {
				t.Fatalf("rt-list not listed: %+v", resp.TransactionStates)
			}
		},
	}
}

// findTxnCoordinatorV asks for transactional id's coordinator at version v (1-4).
func findTxnCoordinatorV(e *dataEnv, v int16, ids ...string) []kmsg.FindCoordinatorResponseCoordinator {
	e.t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	if v >= 4 {
		req.CoordinatorKeys = ids
	} else {
		req.CoordinatorKey = ids[0]
	}
	resp := txnRequest(e, req, v).(*kmsg.FindCoordinatorResponse)
	if v >= 4 {
		return resp.Coordinators
	}
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Host, c.Port, c.ErrorCode = ids[0], resp.NodeID, resp.Host, resp.Port, resp.ErrorCode
	return []kmsg.FindCoordinatorResponseCoordinator{c}
}

// FindCoordinator for a transactional id creates __transaction_state only once enough
// brokers are alive for transaction.state.log.replication.factor (COORDINATOR_NOT_AVAILABLE
// meanwhile), then answers the leader of the id's partition.
func TestTxnFindCoordinatorCreatesTopic(t *testing.T) {
	e := newDataEnv(t)
	defer e.apis.ShutdownTxnCoordinator()
	// Default replication factor 3 with one broker alive: refused, nothing created.
	for v := int16(1); v <= 4; v++ {
		got := findTxnCoordinatorV(e, v, "tx")
		expectCode(t, fmt.Sprintf("v%d before creation", v), got[0].ErrorCode, kerr.CoordinatorNotAvailable)
	}
	if len(e.created) != 0 {
		t.Fatalf("topic created with too few brokers: %v", e.created)
	}
	if !e.logW.contains("number of alive brokers does not meet the required replication factor for the transactional state topic") {
		t.Fatal("no log line about too few brokers")
	}
	e.cfg.Props["transaction.state.log.replication.factor"] = "1"
	got := findTxnCoordinatorV(e, 3, "tx")
	expectCode(t, "first FindCoordinator with RF 1", got[0].ErrorCode, kerr.CoordinatorNotAvailable)
	if !slices.Equal(e.created, []string{TransactionStateTopicName}) {
		t.Fatalf("created %v, want __transaction_state", e.created)
	}

	txnReady(e)
	for v := int16(1); v <= 4; v++ {
		got := findTxnCoordinatorV(e, v, "tx", "other")
		for _, c := range got {
			expectCode(t, fmt.Sprintf("v%d %s", v, c.Key), c.ErrorCode, nil)
			if c.NodeID != testBrokerID || c.Host != "127.0.0.1" || c.Port != 9092 {
				t.Fatalf("v%d coordinator %+v", v, c)
			}
		}
		if want := 1 + int(v/4); len(got) != want {
			t.Fatalf("v%d: %d coordinators, want %d", v, len(got), want)
		}
	}
}

// A fenced producer gets PRODUCER_FENCED from the versions that know it and
// INVALID_PRODUCER_EPOCH from older ones (KafkaApis' per-version mapping, KIP-588).
func TestTxnProducerFencedByVersion(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("t", 1)
	txnReady(e)
	pid, epoch := txnInit(e, "fenced")
	pid2, epoch2 := txnInit(e, "fenced") // a second producer with the same id fences the first
	if pid2 != pid || epoch2 != epoch+1 {
		t.Fatalf("second InitProducerId: pid %d epoch %d, want %d %d", pid2, epoch2, pid, epoch+1)
	}
	fenced := func(v, first int16) *kerr.Error {
		if v < first {
			return kerr.InvalidProducerEpoch
		}
		return kerr.ProducerFenced
	}
	for v := int16(0); v <= 3; v++ {
		got := txnAddPartitions(e, v, "fenced", pid, epoch, "t", 0)
		expectCode(t, fmt.Sprintf("AddPartitionsToTxn v%d", v), got[0], fenced(v, 2))

		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "fenced", pid, epoch, "g"
		expectCode(t, fmt.Sprintf("AddOffsetsToTxn v%d", v), txnRequest(e, ao, v).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, fenced(v, 2))

		et := kmsg.NewPtrEndTxnRequest()
		et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = "fenced", pid, epoch, true
		expectCode(t, fmt.Sprintf("EndTxn v%d", v), txnRequest(e, et, v).(*kmsg.EndTxnResponse).ErrorCode, fenced(v, 2))
	}
	// InitProducerId v3+ naming a producer id the transactional id does not have (KIP-360).
	for v := int16(3); v <= 4; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("fenced"), 60000
		req.ProducerID, req.ProducerEpoch = pid+1000, 0
		resp := txnRequest(e, req, v).(*kmsg.InitProducerIDResponse)
		expectCode(t, fmt.Sprintf("InitProducerId v%d", v), resp.ErrorCode, fenced(v, 4))
		if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Fatalf("InitProducerId v%d error with producer %d epoch %d", v, resp.ProducerID, resp.ProducerEpoch)
		}
	}
	// The current producer still works.
	if got := txnAddPartitions(e, 3, "fenced", pid2, epoch2, "t", 0); got[0] != 0 {
		t.Fatalf("current producer: %v", got)
	}
}

// AddPartitionsToTxn checks every partition before asking the coordinator: an unknown
// partition fails the whole transaction (OPERATION_NOT_ATTEMPTED for the others), and
// producers may not add internal topics (TOPIC_AUTHORIZATION_FAILED in Kafka, whose write
// authorization leaves internal topics out); brokers' v4 may.
func TestTxnAddPartitionsChecksPartitions(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("t", 2)
	txnReady(e)
	pid, epoch := txnInit(e, "checks")
	got := txnAddPartitions(e, 3, "checks", pid, epoch, "t", 0, 7)
	expectCode(t, "existing partition", got[0], kerr.OperationNotAttempted)
	expectCode(t, "missing partition", got[7], kerr.UnknownTopicOrPartition)
	got = txnAddPartitions(e, 3, "checks", pid, epoch, TransactionStateTopicName, 0)
	expectCode(t, "internal topic", got[0], kerr.TopicAuthorizationFailed)
	got = txnAddPartitions(e, 3, "checks", pid, epoch, "t", 1, 1)
	if len(got) != 1 || got[1] != 0 {
		t.Fatalf("partition named twice: %v", got)
	}

	// v4 verification: partition 1 is in the transaction, partition 0 is not.
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "checks", pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = "t", []int32{0, 1}
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	resp := txnRequest(e, req, 4).(*kmsg.AddPartitionsToTxnResponse)
	if len(resp.Transactions) != 1 || len(resp.Transactions[0].Topics) != 1 {
		t.Fatalf("verify response %+v", resp)
	}
	codes := map[int32]int16{}
	for _, p := range resp.Transactions[0].Topics[0].Partitions {
		codes[p.Partition] = p.ErrorCode
	}
	expectCode(t, "verify partition in the transaction", codes[1], nil)
	expectCode(t, "verify partition not in the transaction", codes[0], kerr.InvalidTxnState)
}

// LeaderAndIsr and StopReplica load and unload __transaction_state partitions in the
// transaction coordinator (onElection / onResignation).
func TestTxnStateLeadershipFollowsLeaderAndIsr(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["transaction.state.log.num.partitions"] = "1"
	withFakeProducerIDs(e)
	defer e.apis.ShutdownTxnCoordinator()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 7
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = TransactionStateTopicName, [16]byte{0xdd}
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = 0, e.ctrlEp, testBrokerID, 4
	ps.ISR, ps.Replicas, ps.IsNew = []int32{testBrokerID}, []int32{testBrokerID}, true
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	resp, err := e.apis.handleLeaderAndIsr(t.Context(), nil, req)
	if err != nil || resp.(*kmsg.LeaderAndISRResponse).ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %v %+v", err, resp)
	}
	c := e.apis.txnCoordinator()
	adminWaitFor(t, 10*time.Second, "transaction state partition loaded", func() bool {
		_, code, _ := c.ListTransactions(nil, nil)
		return code == 0
	})
	pid, _ := txnInit(e, "moved")
	if pid < 0 {
		t.Fatalf("pid %d", pid)
	}

	stop := kmsg.NewPtrStopReplicaRequest()
	stop.Version = 3
	stop.ControllerID, stop.ControllerEpoch, stop.BrokerEpoch = testBrokerID, e.ctrlEp, -1
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = TransactionStateTopicName
	sps := kmsg.NewStopReplicaRequestTopicPartitionState()
	sps.Partition, sps.LeaderEpoch, sps.Delete = 0, 5, false
	st.PartitionStates = append(st.PartitionStates, sps)
	stop.Topics = append(stop.Topics, st)
	sresp, err := e.apis.handleStopReplica(t.Context(), nil, stop)
	if err != nil || sresp.(*kmsg.StopReplicaResponse).ErrorCode != 0 {
		t.Fatalf("StopReplica: %v %+v", err, sresp)
	}
	d := c.DescribeTransactions([]string{"moved"})
	if len(d) != 1 || d[0].ErrCode != kerr.NotCoordinator.Code {
		t.Fatalf("after StopReplica: %+v, want NOT_COORDINATOR", d)
	}
}
