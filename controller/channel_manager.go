package controller

// This file mirrors kafka.controller.ControllerChannelManager and RequestSendThread (Kafka
// 3.7): one unbounded queue and one sender goroutine per live broker. A sender connects to
// the broker's inter-broker listener, sends one request at a time, and retries a failed
// request (reconnecting, with backoff) until it succeeds or the broker is removed.

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// brokerChannels is what the event loop needs from the channel manager (a fake in tests).
type brokerChannels interface {
	addBroker(info zkmeta.BrokerInfo)
	removeBroker(id int32)
	// send queues req for broker id; cb (may be nil) runs on the sender goroutine with the
	// response. Requests to unknown brokers are dropped, as in Kafka.
	send(id int32, req kmsg.Request, cb func(kmsg.Response))
	shutdown()
}

// requester is a connection to a broker (kclient.Conn; a fake in tests).
type requester interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	Close() error
}

type dialFunc func(ctx context.Context, addr, clientID string) (requester, error)

func kclientDial(ctx context.Context, addr, clientID string) (requester, error) {
	return dialerFunc(nil)(ctx, addr, clientID)
}

// dialerFunc dials with d: the inter-broker listener's TLS and SASL (nil: plain TCP).
func dialerFunc(d *kclient.Dialer) dialFunc {
	return func(ctx context.Context, addr, clientID string) (requester, error) {
		c, err := d.Dial(ctx, addr, clientID)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return c, nil
	}
}

// NewWithDialer is New whose connections to the brokers are secured by d, the client side
// of the inter-broker listener (Kafka's ControllerChannelManager builds its NetworkClient
// from security.inter.broker.protocol the same way).
func NewWithDialer(cfg Config, zk *zkmeta.Client, d *kclient.Dialer) *Controller {
	return newController(cfg, zk, dialerFunc(d))
}

// channelManager is the ControllerChannelManager. Safe for concurrent use; shutdown stops
// and waits for every sender.
type channelManager struct {
	controllerID   int32
	listener       string
	requestTimeout time.Duration // controller.socket.timeout.ms
	retryBackoff   time.Duration
	dial           dialFunc
	log            *logrus.Entry

	mu      sync.Mutex
	senders map[int32]*requestSendThread
}

func newChannelManager(controllerID int32, listener string, requestTimeout, retryBackoff time.Duration, dial dialFunc, log *logrus.Entry) *channelManager {
	return &channelManager{controllerID: controllerID, listener: listener, requestTimeout: requestTimeout,
		retryBackoff: retryBackoff, dial: dial, log: log, senders: map[int32]*requestSendThread{}}
}

func (m *channelManager) addBroker(info zkmeta.BrokerInfo) {
	ep := interBrokerEndpoint(info, m.listener)
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.senders[info.ID]; ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &requestSendThread{
		m: m, broker: info.ID, addr: addr, cancel: cancel, done: make(chan struct{}),
		signal: make(chan struct{}, 1),
		log:    m.log.WithFields(logrus.Fields{"target_broker": info.ID, "addr": addr}),
	}
	m.senders[info.ID] = s
	go s.run(ctx)
}

func (m *channelManager) removeBroker(id int32) {
	m.mu.Lock()
	s := m.senders[id]
	delete(m.senders, id)
	m.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

func (m *channelManager) send(id int32, req kmsg.Request, cb func(kmsg.Response)) {
	m.mu.Lock()
	s := m.senders[id]
	m.mu.Unlock()
	if s == nil {
		m.log.WithFields(logrus.Fields{"target_broker": id, "api_key": req.Key()}).Debug("dropping request to a broker that is not live")
		return
	}
	s.enqueue(queueItem{req: req, cb: cb})
}

func (m *channelManager) shutdown() {
	m.mu.Lock()
	senders := m.senders
	m.senders = map[int32]*requestSendThread{}
	m.mu.Unlock()
	for _, s := range senders {
		s.stop()
	}
}

type queueItem struct {
	req kmsg.Request
	cb  func(kmsg.Response)
}

// requestSendThread is one broker's queue and sender goroutine.
type requestSendThread struct {
	m      *channelManager
	broker int32
	addr   string
	log    *logrus.Entry
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	queue  []queueItem
	signal chan struct{}
}

func (s *requestSendThread) enqueue(it queueItem) {
	s.mu.Lock()
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

func (s *requestSendThread) stop() {
	s.cancel()
	<-s.done
}

func (s *requestSendThread) next(ctx context.Context) (queueItem, bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			it := s.queue[0]
			s.queue[0] = queueItem{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return it, true
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return queueItem{}, false
		case <-s.signal:
		}
	}
}

func (s *requestSendThread) run(ctx context.Context) {
	defer close(s.done)
	var conn requester
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	clientID := "controller-" + strconv.Itoa(int(s.m.controllerID)) + "-to-broker-" + strconv.Itoa(int(s.broker))
	for {
		it, ok := s.next(ctx)
		if !ok {
			return
		}
		for attempt := 0; ; attempt++ {
			if attempt > 0 && !sleepCtx(ctx, s.m.retryBackoff) {
				return
			}
			if conn == nil {
				dctx, cancel := context.WithTimeout(ctx, s.m.requestTimeout)
				c, err := s.m.dial(dctx, s.addr, clientID)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					s.log.WithError(err).Warn("controller cannot connect to broker; retrying")
					continue
				}
				conn = c
			}
			rctx, cancel := context.WithTimeout(ctx, s.m.requestTimeout)
			resp, err := conn.Request(rctx, it.req)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.WithError(err).WithField("api_key", it.req.Key()).Warn("controller request to broker failed; reconnecting and retrying")
				conn.Close()
				conn = nil
				continue
			}
			if it.cb != nil {
				it.cb(resp)
			}
			break
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
