package broker

// txn_verification.go mirrors kafka.server.AddPartitionsToTxnManager as Kafka 3.7 has it
// (KIP-890 part 1): before a partition leader appends the first transactional batch of a
// producer that has no ongoing transaction there, it asks the transaction coordinator
// whether the partition was added to the transaction, with AddPartitionsToTxn v4 and
// VerifyOnly=true. The coordinator is the leader of __transaction_state partition
// abs(javaHash(transactionalID)) % transaction.state.log.num.partitions in the metadata
// cache, reached on the inter-broker listener.
//
// Batching as Kafka's InterBrokerSendThread does it: verifications wait per coordinator
// node; one request per node is in flight at a time and carries every transactional id
// queued for that node when it leaves. At most one verification per transactional id waits:
// a newer one with a higher epoch fences the queued one (INVALID_PRODUCER_EPOCH), one with
// the same epoch replaces it (NETWORK_EXCEPTION to the older, a retry), and one with a lower
// epoch is refused at once (INVALID_PRODUCER_EPOCH).
//
// Results: only unverified partitions appear, with the coordinator's code, except
// PRODUCER_FENCED → INVALID_PRODUCER_EPOCH (producers expect that here) and a top-level
// CLUSTER_AUTHORIZATION_FAILED → INVALID_TXN_STATE. A coordinator that does not serve v4
// skips verification (all verified, as Kafka does on a version mismatch); a broken
// connection or timeout (request.timeout.ms) is NETWORK_EXCEPTION for every partition.
//
// Concurrency: verify may be called from any goroutine and blocks until its result. The
// manager owns one dispatcher goroutine plus one sender goroutine per node with a request
// in flight; all start on first use and stop in shutdown (ReplicaManager.Shutdown).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator"
	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/logstore"
)

// txnVerifier verifies that partitions are part of a producer's ongoing transaction. The
// result lists unverified partitions with their (already translated) error code; an empty
// result means every partition is verified.
type txnVerifier interface {
	verify(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tps []logstore.TopicPartition) map[logstore.TopicPartition]int16
	shutdown()
}

// addPartitionsToTxnManager is Kafka's AddPartitionsToTxnManager.
type addPartitionsToTxnManager struct {
	brokerID       int32
	metadata       *MetadataCache
	listener       string
	numPartitions  func() int32
	requestTimeout time.Duration
	log            *logrus.Entry
	// send delivers one request to node at addr; nil means over a cached kclient.Conn.
	// Tests replace it.
	send func(ctx context.Context, node int32, addr string, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error)

	mu struct {
		sync.Mutex
		started, stopped bool
		nodes            map[int32]*nodeTxns // waiting to be sent, by coordinator node
		inflight         map[int32]bool
	}
	wake   chan struct{} // capacity 1
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	connMu sync.Mutex // guards conns; a node's Conn is used by that node's one sender at a time
	conns  map[int32]*verifyConn

	dialer *kclient.Dialer // the inter-broker listener's security; nil = plain TCP
}

type verifyConn struct {
	addr string
	c    *kclient.Conn
}

// pendingVerification is one transactional id's verification waiting for its answer
// (TransactionDataAndCallbacks' entry).
type pendingVerification struct {
	transactionalID string
	producerID      int64
	producerEpoch   int16
	tps             []logstore.TopicPartition
	start           time.Time
	done            chan map[logstore.TopicPartition]int16 // capacity 1, written once
}

func (p *pendingVerification) complete(r map[logstore.TopicPartition]int16) {
	select {
	case p.done <- r:
	default:
	}
}

func (p *pendingVerification) allWith(code int16) map[logstore.TopicPartition]int16 {
	out := make(map[logstore.TopicPartition]int16, len(p.tps))
	for _, tp := range p.tps {
		out[tp] = code
	}
	return out
}

// nodeTxns is what waits for one coordinator node, by transactional id in arrival order.
type nodeTxns struct {
	byID  map[string]*pendingVerification
	order []string
}

func newAddPartitionsToTxnManager(brokerID int32, metadata *MetadataCache, listener string, numPartitions func() int32, requestTimeout time.Duration, log *logrus.Entry) *addPartitionsToTxnManager {
	m := &addPartitionsToTxnManager{
		brokerID:       brokerID,
		metadata:       metadata,
		listener:       listener,
		numPartitions:  numPartitions,
		requestTimeout: requestTimeout,
		log:            log.WithFields(logrus.Fields{"component": "add.partitions.to.txn.manager", "broker": brokerID}),
		wake:           make(chan struct{}, 1),
		conns:          map[int32]*verifyConn{},
	}
	m.mu.nodes = map[int32]*nodeTxns{}
	m.mu.inflight = map[int32]bool{}
	return m
}

// coordinatorFor is AddPartitionsToTxnManager.getTransactionCoordinator: the live leader of
// the transactional id's __transaction_state partition and its inter-broker address.
func (m *addPartitionsToTxnManager) coordinatorFor(transactionalID string) (int32, string, bool) {
	n := m.numPartitions()
	if n <= 0 {
		return -1, "", false
	}
	pm, ok := m.metadata.Partition(logstore.TopicPartition{Topic: TransactionStateTopicName, Partition: coordinator.PartitionFor(transactionalID, n)})
	if !ok || pm.Leader < 0 {
		return -1, "", false
	}
	b, ok := m.metadata.Broker(pm.Leader)
	if !ok {
		return -1, "", false
	}
	ep, ok := b.Endpoint(m.listener)
	if !ok {
		return -1, "", false
	}
	return pm.Leader, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), true
}

// verify is verifyTransaction: it queues the verification for the coordinator's node and
// waits for the answer or ctx's end.
func (m *addPartitionsToTxnManager) verify(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tps []logstore.TopicPartition) map[logstore.TopicPartition]int16 {
	p := &pendingVerification{transactionalID: transactionalID, producerID: producerID, producerEpoch: producerEpoch,
		tps: tps, start: time.Now(), done: make(chan map[logstore.TopicPartition]int16, 1)}
	node, _, ok := m.coordinatorFor(transactionalID)
	if !ok {
		return p.allWith(kerr.CoordinatorNotAvailable.Code)
	}
	m.mu.Lock()
	if m.mu.stopped {
		m.mu.Unlock()
		return p.allWith(kerr.CoordinatorNotAvailable.Code)
	}
	if !m.mu.started {
		m.startLocked()
	}
	n := m.mu.nodes[node]
	if n == nil {
		n = &nodeTxns{byID: map[string]*pendingVerification{}}
		m.mu.nodes[node] = n
	}
	if old := n.byID[transactionalID]; old != nil {
		if old.producerEpoch > producerEpoch {
			m.mu.Unlock()
			return p.allWith(kerr.InvalidProducerEpoch.Code) // the incoming one is fenced
		}
		code := kerr.NetworkException.Code // same epoch: a retry; the older one retries too
		if old.producerEpoch < producerEpoch {
			code = kerr.InvalidProducerEpoch.Code
		}
		old.complete(old.allWith(code))
		for i, id := range n.order {
			if id == transactionalID {
				n.order = append(n.order[:i], n.order[i+1:]...)
				break
			}
		}
	}
	n.byID[transactionalID] = p
	n.order = append(n.order, transactionalID)
	m.mu.Unlock()
	m.signal()

	select {
	case r := <-p.done:
		return r
	case <-ctx.Done():
		return p.allWith(kerr.NetworkException.Code)
	}
}

func (m *addPartitionsToTxnManager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// startLocked starts the dispatcher. m.mu held.
func (m *addPartitionsToTxnManager) startLocked() {
	m.mu.started = true
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.run()
}

// run is the InterBrokerSendThread loop: on every wake-up, send what waits for each node
// without a request in flight.
func (m *addPartitionsToTxnManager) run() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.wake:
		}
		m.mu.Lock()
		batches := map[int32]*nodeTxns{}
		for node, n := range m.mu.nodes {
			if m.mu.inflight[node] {
				continue
			}
			batches[node] = n
			m.mu.inflight[node] = true
			delete(m.mu.nodes, node)
		}
		m.mu.Unlock()
		for node, n := range batches {
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.sendBatch(node, n)
				m.mu.Lock()
				delete(m.mu.inflight, node)
				m.mu.Unlock()
				m.signal()
			}()
		}
	}
}

// sendBatch sends one AddPartitionsToTxn (VerifyOnly) to node and completes every
// verification in n (AddPartitionsToTxnHandler.onComplete).
func (m *addPartitionsToTxnManager) sendBatch(node int32, n *nodeTxns) {
	all := func(code int16) {
		for _, id := range n.order {
			p := n.byID[id]
			p.complete(p.allWith(code))
		}
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	for _, id := range n.order {
		p := n.byID[id]
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = p.transactionalID, p.producerID, p.producerEpoch, true
		idx := map[string]int{}
		for _, tp := range p.tps {
			i, ok := idx[tp.Topic]
			if !ok {
				i = len(t.Topics)
				idx[tp.Topic] = i
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic = tp.Topic
				t.Topics = append(t.Topics, tt)
			}
			t.Topics[i].Partitions = append(t.Topics[i].Partitions, tp.Partition)
		}
		req.Transactions = append(req.Transactions, t)
	}
	log := m.log.WithFields(logrus.Fields{"coordinator": node, "transactions": len(n.order)})

	// The node may have moved since the verification was queued: send to where its
	// address is now, as Kafka's NetworkClient does with the node it was given.
	addr := ""
	if b, ok := m.metadata.Broker(node); ok {
		if ep, ok := b.Endpoint(m.listener); ok {
			addr = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		}
	}
	if addr == "" {
		log.Warn("AddPartitionsToTxn verification failed: coordinator node is gone")
		all(kerr.NetworkException.Code)
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.requestTimeout)
	defer cancel()
	send := m.send
	if send == nil {
		send = m.sendOverConn
	}
	resp, err := send(ctx, node, addr, req)
	switch {
	case errors.Is(err, errVerificationUnsupported):
		// Kafka: a coordinator that cannot handle VerifyOnly means verification is skipped.
		log.WithError(err).Warn("AddPartitionsToTxn verification not supported by the coordinator; continuing the produce without it")
		for _, id := range n.order {
			n.byID[id].complete(map[logstore.TopicPartition]int16{})
		}
		return
	case err != nil:
		log.WithError(err).Warn("AddPartitionsToTxn verification failed with a network error")
		all(kerr.NetworkException.Code)
		return
	}
	if resp.ErrorCode != 0 {
		code := resp.ErrorCode
		if code == kerr.ClusterAuthorizationFailed.Code {
			// Clients must not see CLUSTER_AUTHORIZATION_FAILED: the verification did not complete.
			code = kerr.InvalidTxnState.Code
		}
		log.WithField("error", kerr.ErrorForCode(resp.ErrorCode)).Error("AddPartitionsToTxn verification returned an error")
		all(code)
		return
	}
	answered := map[string]bool{}
	for _, tr := range resp.Transactions {
		p, ok := n.byID[tr.TransactionalID]
		if !ok || answered[tr.TransactionalID] {
			continue
		}
		answered[tr.TransactionalID] = true
		unverified := map[logstore.TopicPartition]int16{}
		for _, t := range tr.Topics {
			for _, pr := range t.Partitions {
				if pr.ErrorCode == 0 {
					continue
				}
				code := pr.ErrorCode
				if code == kerr.ProducerFenced.Code {
					code = kerr.InvalidProducerEpoch.Code // what producers expect here
				}
				unverified[logstore.TopicPartition{Topic: t.Topic, Partition: pr.Partition}] = code
			}
		}
		p.complete(unverified)
	}
	for _, id := range n.order {
		if !answered[id] {
			// Kafka never hears of these again; answer with a retriable error instead.
			p := n.byID[id]
			p.complete(p.allWith(kerr.NetworkException.Code))
		}
	}
}

// errVerificationUnsupported: the coordinator does not serve AddPartitionsToTxn v4.
var errVerificationUnsupported = errors.New("broker: coordinator does not support AddPartitionsToTxn v4")

// sendOverConn sends req on the node's cached connection, dialing when there is none or the
// node's address changed; a failed request drops the connection.
func (m *addPartitionsToTxnManager) sendOverConn(ctx context.Context, node int32, addr string, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	m.connMu.Lock()
	vc := m.conns[node]
	if vc != nil && vc.addr != addr {
		vc.c.Close()
		delete(m.conns, node)
		vc = nil
	}
	m.connMu.Unlock()
	if vc == nil {
		c, err := m.dialer.Dial(ctx, addr, fmt.Sprintf("broker-%d-txn-verification", m.brokerID))
		if err != nil {
			return nil, err
		}
		vc = &verifyConn{addr: addr, c: c}
		m.connMu.Lock()
		if m.conns == nil { // shut down meanwhile
			m.connMu.Unlock()
			c.Close()
			return nil, kclient.ErrClosed
		}
		m.conns[node] = vc
		m.connMu.Unlock()
	}
	if r, ok := vc.c.Versions(req.Key()); !ok || r.Max < 4 {
		return nil, errVerificationUnsupported
	}
	resp, err := vc.c.Request(ctx, req)
	if err != nil {
		m.connMu.Lock()
		if m.conns[node] == vc {
			delete(m.conns, node)
		}
		m.connMu.Unlock()
		vc.c.Close()
		if errors.Is(err, kclient.ErrUnsupportedRequest) {
			return nil, errVerificationUnsupported
		}
		return nil, err
	}
	return resp.(*kmsg.AddPartitionsToTxnResponse), nil
}

// shutdown stops the dispatcher and the senders, fails what still waits and closes the
// connections. Later verifications answer COORDINATOR_NOT_AVAILABLE.
func (m *addPartitionsToTxnManager) shutdown() {
	m.mu.Lock()
	m.mu.stopped = true
	cancel := m.cancel
	waiting := m.mu.nodes
	m.mu.nodes = map[int32]*nodeTxns{}
	m.mu.Unlock()
	if cancel != nil {
		cancel() // senders in flight fail with NETWORK_EXCEPTION
	}
	m.wg.Wait()
	for _, n := range waiting {
		for _, id := range n.order {
			p := n.byID[id]
			p.complete(p.allWith(kerr.NetworkException.Code))
		}
	}
	m.connMu.Lock()
	conns := m.conns
	m.conns = nil
	m.connMu.Unlock()
	for _, vc := range conns {
		vc.c.Close()
	}
}
