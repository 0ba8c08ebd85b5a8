package broker

// txn_glue.go connects the transaction coordinator (coordinator/transaction) to this broker,
// as KafkaServer does with TransactionCoordinator: it implements transaction.Log over the
// ReplicaManager's __transaction_state partitions (appends as leader with acks=-1, reads up
// to the log end), hands the coordinator the broker's producer id manager, sends
// WriteTxnMarkers to partition leaders over the inter-broker listener
// (TransactionMarkerChannelManager's network client: one connection per destination broker,
// closed on shutdown), and creates __transaction_state on the first FindCoordinator for a
// transactional id (KafkaApis.getCoordinator → AutoTopicCreationManager).
//
// The coordinator is created and started on first use (a FindCoordinator, a transactional
// request, or a LeaderAndIsr for a __transaction_state partition); Broker.Shutdown stops it
// through ShutdownTxnCoordinator before the group coordinator, as KafkaServer.shutdown does.
// LeaderAndIsr and StopReplica (04, 05) load and unload __transaction_state partitions, with
// the partition's leader epoch as the coordinator epoch (KafkaApis' onLeadershipChange).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/transaction"
	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/logstore"
)

// TransactionStateTopicName is Topic.TRANSACTION_STATE_TOPIC_NAME.
const TransactionStateTopicName = "__transaction_state"

// txnCoordinator returns this broker's transaction coordinator, creating and starting it once.
func (a *APIs) txnCoordinator() *transaction.TransactionCoordinator {
	a.services.mu.Lock()
	defer a.services.mu.Unlock()
	if a.services.txns == nil {
		a.services.txnMarkers = newTxnMarkerSender(a)
		a.services.txns = transaction.New(a.txnConfig(), &txnStateLog{internalTopicLog{a: a, topic: TransactionStateTopicName}}, txnProducerIDs{a: a}, a.services.txnMarkers)
		a.services.txns.Start()
	}
	return a.services.txns
}

// ShutdownTxnCoordinator stops the coordinator if one was started and closes its marker
// connections (KafkaServer.shutdown: transactionCoordinator.shutdown, which shuts the
// TransactionMarkerChannelManager down, before the group coordinator). The connections are
// closed first so that no marker send in flight holds the coordinator's shutdown up.
func (a *APIs) ShutdownTxnCoordinator() {
	a.services.mu.Lock()
	c, markers := a.services.txns, a.services.txnMarkers
	a.services.txns, a.services.txnMarkers = nil, nil
	a.services.mu.Unlock()
	if markers != nil {
		markers.Close()
	}
	if c != nil {
		c.Shutdown()
	}
}

// OnTxnStateLeadershipChange is the TransactionCoordinator part of KafkaApis'
// onLeadershipChange and of StopReplica: load a __transaction_state partition this broker now
// leads (onElection, coordinator epoch = leader epoch) and unload one it does not
// (onResignation; leaderEpoch < 0 means unknown, as StopReplica v0-2 and a delete without
// an epoch carry). Safe to call for any topic.
func (a *APIs) OnTxnStateLeadershipChange(tp logstore.TopicPartition, isLeader bool, leaderEpoch int32) {
	if tp.Topic != TransactionStateTopicName {
		return
	}
	c := a.txnCoordinator()
	if isLeader {
		c.OnElection(tp.Partition, leaderEpoch)
		return
	}
	var epoch *int32
	if leaderEpoch >= 0 {
		e := leaderEpoch
		epoch = &e
	}
	c.OnResignation(tp.Partition, epoch)
}

// txnConfig reads the coordinator's settings (TransactionConfig) from the broker config.
func (a *APIs) txnConfig() transaction.Config {
	var props map[string]string
	cfg := transaction.Config{BrokerID: a.BrokerID, Logger: a.Log}
	if a.Config != nil {
		props = a.Config.Props
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	ms := func(key string, def int64) time.Duration { return propMs(props, key, def) }
	cfg.NumPartitions = a.txnNumPartitions()
	cfg.MaxTimeout = ms("transaction.max.timeout.ms", 900000)
	cfg.TransactionalIDExpiration = ms("transactional.id.expiration.ms", 604800000)
	cfg.AbortTimedOutInterval = ms("transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000)
	cfg.RemoveExpiredInterval = ms("transaction.remove.expired.transaction.cleanup.interval.ms", 3600000)
	cfg.RequestTimeout = ms("request.timeout.ms", 30000)
	if a.Config != nil && a.Config.RequestTimeout > 0 {
		cfg.RequestTimeout = a.Config.RequestTimeout
	}
	cfg.LoadBufferSize = int32(propInt(props, "transaction.state.log.load.buffer.size", 5242880))
	if a.Now != nil {
		cfg.Clock = a.Now
	}
	return cfg
}

// txnNumPartitions is transaction.state.log.num.partitions (50).
func (a *APIs) txnNumPartitions() int32 {
	var props map[string]string
	if a.Config != nil {
		props = a.Config.Props
	}
	if n := propInt(props, "transaction.state.log.num.partitions", 50); n > 0 && n <= 1<<31-1 {
		return int32(n)
	}
	return 50
}

// txnProducerIDs hands out producer ids from the broker's ProducerIdManager (the one
// InitProducerId for idempotent producers uses), looked up on each call so that it is the
// manager of the broker's current lifetime.
type txnProducerIDs struct{ a *APIs }

func (p txnProducerIDs) GenerateProducerID() (int64, error) {
	return p.a.producerIDManager().GenerateProducerID()
}

// ---- transaction.Log over __transaction_state ----

// txnStateLog implements transaction.Log over the ReplicaManager.
type txnStateLog struct{ internalTopicLog }

func txnStateTP(p int32) logstore.TopicPartition {
	return logstore.TopicPartition{Topic: TransactionStateTopicName, Partition: p}
}

// Append is TransactionStateManager.appendTransactionToLog's replicaManager.appendRecords:
// required acks -1, so a state transition is answered only once the ISR has it.
func (l *txnStateLog) Append(ctx context.Context, p int32, batch []byte, timeout time.Duration) (int64, error) {
	return l.appendAs(ctx, p, batch, -1, timeout, AppendParams{Origin: logstore.OriginCoordinator})
}

// ---- MarkerSender over internal/kclient ----

// errMarkerSenderClosed is returned by Send after Close.
var errMarkerSenderClosed = errors.New("broker: transaction marker sender is shut down")

// txnMarkerSender is the network side of TransactionMarkerChannelManager: WriteTxnMarkers
// to a broker's inter-broker listener, over one connection per destination broker (requests
// to one broker are serialized on it, as Kafka's NetworkClient keeps one connection per
// node). A failed request closes its connection; the next Send dials again, at the address
// the metadata cache has then (a restarted broker may have moved). Safe for concurrent use.
type txnMarkerSender struct {
	a        *APIs
	listener string
	clientID string

	mu struct {
		sync.Mutex
		closed bool
		conns  map[int32]*markerConn
	}
}

// markerConn is the connection to one destination broker. mu is held across dial and
// request, so one broker's sends queue behind each other and never dial twice at once; conn
// is also read by Close without mu, which a request in flight holds.
type markerConn struct {
	mu   sync.Mutex
	conn atomic.Pointer[kclient.Conn] // nil until dialed or after a failure
	addr string                       // guarded by mu
}

// interBrokerDialer is the broker's Dialer for its inter-broker listener, kept with the
// ReplicaManager; nil (plain TCP) when there is none, as in tests without one.
func (a *APIs) interBrokerDialer() *kclient.Dialer {
	if a.Replicas == nil {
		return nil
	}
	return a.Replicas.cfg.Dialer
}

func newTxnMarkerSender(a *APIs) *txnMarkerSender {
	s := &txnMarkerSender{a: a, listener: "PLAINTEXT", clientID: fmt.Sprintf("broker-%d-txn-marker-sender", a.BrokerID)}
	if a.Config != nil && a.Config.InterBrokerListenerName != "" {
		s.listener = a.Config.InterBrokerListenerName
	}
	s.mu.conns = map[int32]*markerConn{}
	return s
}

// Leader is the current leader of topic-partition in the metadata cache
// (MetadataCache.getPartitionLeaderEndpoint on the inter-broker listener): ok=false only
// when the partition is not in the cache (deleted: the coordinator drops its marker);
// (-1, true) when it exists without a live leader reachable on the inter-broker listener
// (Kafka's Node.noNode: the marker waits and is retried).
func (s *txnMarkerSender) Leader(topic string, partition int32) (int32, bool) {
	md := s.a.Metadata
	if md == nil {
		return -1, false
	}
	pm, ok := md.Partition(logstore.TopicPartition{Topic: topic, Partition: partition})
	if !ok {
		return -1, false
	}
	if pm.Leader == NoLeader {
		return -1, true
	}
	b, ok := md.Broker(pm.Leader)
	if !ok {
		return -1, true
	}
	if _, ok := b.Endpoint(s.listener); !ok {
		return -1, true
	}
	return pm.Leader, true
}

// Send sends req to brokerID and waits for its answer or ctx's end.
func (s *txnMarkerSender) Send(ctx context.Context, brokerID int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	mc, err := s.connFor(brokerID)
	if err != nil {
		return nil, err
	}
	addr, err := s.brokerAddr(brokerID)
	if err != nil {
		return nil, err
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	conn := mc.conn.Load()
	if conn != nil && mc.addr != addr {
		conn.Close()
		mc.conn.Store(nil)
		conn = nil
	}
	if conn == nil {
		c, err := s.a.interBrokerDialer().Dial(ctx, addr, s.clientID)
		if err != nil {
			return nil, fmt.Errorf("connect to broker %d for transaction markers: %w", brokerID, err)
		}
		// Installed under s.mu: either Close sees it or we see Close, never neither.
		s.mu.Lock()
		closed := s.mu.closed
		if !closed {
			mc.conn.Store(c)
			mc.addr = addr
		}
		s.mu.Unlock()
		if closed {
			c.Close()
			return nil, errMarkerSenderClosed
		}
		conn = c
	}
	r, err := conn.Request(ctx, req)
	if err != nil {
		conn.Close()
		mc.conn.CompareAndSwap(conn, nil)
		return nil, fmt.Errorf("WriteTxnMarkers to broker %d: %w", brokerID, err)
	}
	resp, ok := r.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		return nil, fmt.Errorf("WriteTxnMarkers to broker %d: unexpected response %T", brokerID, r)
	}
	return resp, nil
}

func (s *txnMarkerSender) connFor(brokerID int32) (*markerConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, errMarkerSenderClosed
	}
	mc := s.mu.conns[brokerID]
	if mc == nil {
		mc = &markerConn{}
		s.mu.conns[brokerID] = mc
	}
	return mc, nil
}

// brokerAddr is brokerID's inter-broker endpoint from the metadata cache.
func (s *txnMarkerSender) brokerAddr(brokerID int32) (string, error) {
	md := s.a.Metadata
	if md == nil {
		return "", fmt.Errorf("broker %d: %w", brokerID, kerr.BrokerNotAvailable)
	}
	b, ok := md.Broker(brokerID)
	if !ok {
		return "", fmt.Errorf("broker %d not alive: %w", brokerID, kerr.BrokerNotAvailable)
	}
	ep, ok := b.Endpoint(s.listener)
	if !ok {
		return "", fmt.Errorf("broker %d has no %s endpoint: %w", brokerID, s.listener, kerr.BrokerNotAvailable)
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

// Close closes every connection (a request in flight on one fails at once) and makes later
// sends fail.
func (s *txnMarkerSender) Close() {
	s.mu.Lock()
	s.mu.closed = true
	conns := s.mu.conns
	s.mu.conns = map[int32]*markerConn{}
	s.mu.Unlock()
	for _, mc := range conns {
		// kclient.Conn.Close does not wait for the request in flight, so close without
		// taking mc.mu, which that request holds.
		if c := mc.conn.Swap(nil); c != nil {
			c.Close()
		}
	}
}

// ---- FindCoordinator key type 1 ----

// findTxnCoordinator is KafkaApis.getCoordinator for key type TRANSACTION: the leader of the
// transactional id's __transaction_state partition on the request's listener;
// COORDINATOR_NOT_AVAILABLE while the topic is being created, has no leader, or too few
// brokers are alive to create it.
func (a *APIs) findTxnCoordinator(ctx context.Context, rc *RequestContext, key string) (node int32, host string, port int32, err *kerr.Error) {
	p := a.txnCoordinator().PartitionFor(key)
	if a.Metadata == nil {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	if !a.Metadata.Contains(TransactionStateTopicName) {
		a.createTxnStateTopic(ctx)
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	pm, ok := a.Metadata.Partition(txnStateTP(p))
	if !ok || pm.Leader == NoLeader {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	b, ok := a.Metadata.Broker(pm.Leader)
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	listener := "PLAINTEXT"
	if rc != nil && rc.ListenerName != "" {
		listener = rc.ListenerName
	}
	ep, ok := b.Endpoint(listener)
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	return pm.Leader, ep.Host, ep.Port, nil
}

// createTxnStateTopic is AutoTopicCreationManager.createTopics for __transaction_state: Kafka
// refuses while fewer brokers are alive than transaction.state.log.replication.factor; the
// topic gets transaction.state.log.num.partitions partitions and the
// transaction.state.log.* configs (autoCreatableTopic).
func (a *APIs) createTxnStateTopic(ctx context.Context) {
	var props map[string]string
	if a.Config != nil {
		props = a.Config.Props
	}
	rf := propInt(props, "transaction.state.log.replication.factor", 3)
	if alive := len(a.Metadata.AliveBrokers()); int64(alive) < rf {
		a.Log.WithFields(logrus.Fields{"alive_brokers": alive, "replication_factor": rf}).
			Info("number of alive brokers does not meet the required replication factor for the transactional state topic")
		return
	}
	if a.AutoCreateTopic == nil {
		return
	}
	err := a.AutoCreateTopic(ctx, TransactionStateTopicName)
	var ke *kerr.Error
	if err != nil && !(errors.As(err, &ke) && ke == kerr.TopicAlreadyExists) {
		a.Log.WithError(err).Warn("could not create the transactional state topic")
	}
}

// fencedForVersion is KafkaApis' answer to clients older than PRODUCER_FENCED (KIP-588): they
// get INVALID_PRODUCER_EPOCH, which they handle the same way. firstVersion is the request
// version that introduced PRODUCER_FENCED for the API.
func fencedForVersion(code, version, firstVersion int16) int16 {
	if version < firstVersion && code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
