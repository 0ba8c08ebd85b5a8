package broker

// producer_id_manager.go mirrors Kafka 3.7's RPCProducerIdManager (the broker side of
// producer id allocation in ZK mode with IBP >= 3.0): producer ids are handed out from a
// block of 1000 that the controller allocated with AllocateProducerIds (API 67) and recorded
// in /latest_producer_id_block. When 90% of the current block is used the next block is
// requested in the background; if the block runs out before the next one arrives (or before
// the first one ever arrived) generateProducerId fails with COORDINATOR_LOAD_IN_PROGRESS and
// the client retries InitProducerId, exactly as Kafka answers.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// producerIDPrefetchThreshold is ProducerIdManager.PRODUCER_ID_PREFETCH_THRESHOLD.
	producerIDPrefetchThreshold = 0.90
	// producerIDRetryBackoff is RPCProducerIdManager.RETRY_BACKOFF_MS.
	producerIDRetryBackoff = 50 * time.Millisecond
)

// producerIDBlock is ProducerIdsBlock: [start, start+size) handed out from next.
type producerIDBlock struct {
	start int64
	size  int32
	next  int64
}

func (b producerIDBlock) last() int64 { return b.start + int64(b.size) - 1 }

// AllocateProducerIDsFunc sends one AllocateProducerIds request to the active controller.
type AllocateProducerIDsFunc func(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error)

// ProducerIDManager is RPCProducerIdManager. Safe for concurrent use. Each block request
// runs in a goroutine the manager owns; Shutdown stops and waits for it.
type ProducerIDManager struct {
	brokerID    int32
	brokerEpoch func() int64
	allocate    AllocateProducerIDsFunc
	timeout     time.Duration
	now         func() time.Time
	log         *logrus.Entry

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		current      producerIDBlock
		next         *producerIDBlock
		inFlight     bool
		backoffUntil time.Time
		closed       bool
	}
}

// NewProducerIDManager returns a manager with no block yet: the first generateProducerId
// requests one.
func NewProducerIDManager(brokerID int32, brokerEpoch func() int64, allocate AllocateProducerIDsFunc, requestTimeout time.Duration, log *logrus.Entry) *ProducerIDManager {
	if requestTimeout <= 0 {
		requestTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &ProducerIDManager{brokerID: brokerID, brokerEpoch: brokerEpoch, allocate: allocate, timeout: requestTimeout,
		now: time.Now, log: log.WithField("component", "producer-id-manager"), ctx: ctx, cancel: cancel}
	m.mu.current = producerIDBlock{start: -1, size: 0, next: 0} // ProducerIdsBlock.EMPTY
	return m
}

// errProducerIDBlockFull is the COORDINATOR_LOAD_IN_PROGRESS Kafka answers while waiting for a block.
var errProducerIDBlockFull = fmt.Errorf("producer id block is full, waiting for the next block: %w", kerr.CoordinatorLoadInProgress)

// GenerateProducerID returns the next producer id (RPCProducerIdManager.generateProducerId).
func (m *ProducerIDManager) GenerateProducerID() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return -1, fmt.Errorf("producer id manager is shut down: %w", kerr.CoordinatorNotAvailable)
	}
	for {
		cur := &m.mu.current
		if cur.size > 0 && cur.next <= cur.last() {
			id := cur.next
			cur.next++
			if id >= cur.start+int64(float64(cur.size)*producerIDPrefetchThreshold) {
				m.maybeRequestNextBlockLocked()
			}
			return id, nil
		}
		if m.mu.next == nil {
			m.maybeRequestNextBlockLocked()
			return -1, errProducerIDBlockFull
		}
		m.mu.current = *m.mu.next
		m.mu.next = nil
	}
}

func (m *ProducerIDManager) maybeRequestNextBlockLocked() {
	if m.mu.inFlight || m.mu.next != nil || m.mu.closed || m.now().Before(m.mu.backoffUntil) {
		return
	}
	m.mu.inFlight = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.requestBlock()
	}()
}

// requestBlock sends one AllocateProducerIds and installs the block it gets
// (sendRequest + handleAllocateProducerIdsResponse).
func (m *ProducerIDManager) requestBlock() {
	ctx, cancel := context.WithTimeout(m.ctx, m.timeout)
	defer cancel()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = m.brokerID, m.brokerEpoch()
	resp, err := m.allocate(ctx, req)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.inFlight = false
	fail := func(err error) {
		m.mu.backoffUntil = m.now().Add(producerIDRetryBackoff)
		if m.ctx.Err() == nil {
			m.log.WithError(err).Warn("failed to get a producer id block from the controller")
		}
	}
	if err != nil {
		fail(err)
		return
	}
	if resp.ErrorCode != 0 {
		fail(kerr.ErrorForCode(resp.ErrorCode))
		return
	}
	if resp.ProducerIDStart < 0 || resp.ProducerIDLen <= 0 || resp.ProducerIDStart > math.MaxInt64-int64(resp.ProducerIDLen) {
		fail(fmt.Errorf("invalid producer id block start %d length %d", resp.ProducerIDStart, resp.ProducerIDLen))
		return
	}
	if cur := m.mu.current; cur.size > 0 && resp.ProducerIDStart <= cur.last() {
		fail(fmt.Errorf("producer id block start %d is not after the current block ending at %d", resp.ProducerIDStart, cur.last()))
		return
	}
	m.mu.next = &producerIDBlock{start: resp.ProducerIDStart, size: resp.ProducerIDLen, next: resp.ProducerIDStart}
	m.log.WithFields(logrus.Fields{"block_start": resp.ProducerIDStart, "block_len": resp.ProducerIDLen}).
		Info("got a producer id block from the controller")
}

// Shutdown stops a block request in flight and waits for it.
func (m *ProducerIDManager) Shutdown() {
	m.mu.Lock()
	m.mu.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// ---- wiring into APIs ----

// producerIDManager returns this broker's manager, created on first use (until broker.go
// holds it), sending AllocateProducerIds to the controller named by the metadata cache.
func (a *APIs) producerIDManager() *ProducerIDManager {
	a.services.mu.Lock()
	defer a.services.mu.Unlock()
	if a.services.pids != nil {
		return a.services.pids
	}
	timeout := 30 * time.Second
	if a.Config != nil && a.Config.ControllerSocketTimeout > 0 {
		timeout = a.Config.ControllerSocketTimeout
	}
	ch := &controllerChannel{a: a}
	log := a.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	a.services.pids = NewProducerIDManager(a.BrokerID, a.brokerEpochOrUnknown, ch.allocateProducerIDs, timeout, log)
	return a.services.pids
}

// ShutdownProducerIDManager stops the producer id manager if one was started (KafkaServer
// shuts the transaction coordinator's ProducerIdManager down after the socket servers).
func (a *APIs) ShutdownProducerIDManager() {
	a.services.mu.Lock()
	m := a.services.pids
	a.services.pids = nil
	a.services.mu.Unlock()
	if m != nil {
		m.Shutdown()
	}
}

func (a *APIs) brokerEpochOrUnknown() int64 {
	if ad := a.admin(); ad != nil {
		return ad.brokerEpoch.Load()
	}
	return -1
}

// controllerChannel sends AllocateProducerIds to the controller the metadata cache names
// (Kafka's BrokerToControllerChannelManager). A block is needed once per 1000 producers, so
// each request dials and closes its own connection: nothing stays open between blocks.
type controllerChannel struct{ a *APIs }

var errNoController = errors.New("broker: no controller known")

func (c *controllerChannel) controllerAddr() (string, error) {
	md := c.a.Metadata
	if md == nil {
		return "", errNoController
	}
	id := md.ControllerID()
	if id < 0 {
		return "", errNoController
	}
	b, ok := md.Broker(id)
	if !ok {
		return "", fmt.Errorf("%w: controller %d not in the metadata cache", errNoController, id)
	}
	listener := "PLAINTEXT"
	if c.a.Config != nil && c.a.Config.InterBrokerListenerName != "" {
		listener = c.a.Config.InterBrokerListenerName
	}
	ep, ok := b.Endpoint(listener)
	if !ok {
		return "", fmt.Errorf("%w: controller %d has no %s endpoint", errNoController, id, listener)
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

func (c *controllerChannel) allocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error) {
	addr, err := c.controllerAddr()
	if err != nil {
		return nil, err
	}
	conn, err := c.a.interBrokerDialer().Dial(ctx, addr, fmt.Sprintf("broker-%d-producer-id-manager", c.a.BrokerID))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	r, err := conn.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.AllocateProducerIDsResponse), nil
}
