package controller

// This file mirrors kafka.controller.KafkaController's election and lifecycle (Kafka 3.7):
// every broker watches /controller; when it is absent a broker tries the multi-op that creates
// it and bumps /controller_epoch; the winner runs the event loop until it resigns, then
// campaigns again.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// Config is the controller's part of KafkaConfig.
type Config struct {
	BrokerID                    int32
	InterBrokerListenerName     string // inter.broker.listener.name; default "PLAINTEXT"
	DefaultReplicationFactor    int16
	NumPartitions               int32
	UncleanLeaderElectionEnable bool // unclean.leader.election.enable (broker default)
	DisableTopicDeletion        bool // !delete.topic.enable (Kafka's default true: zero value deletes)
	// !auto.leader.rebalance.enable (Kafka's default true: zero value rebalances).
	DisableAutoLeaderRebalance         bool
	LeaderImbalanceCheckInterval       time.Duration // leader.imbalance.check.interval.seconds; 0 = 300 s
	LeaderImbalancePerBrokerPercentage int           // leader.imbalance.per.broker.percentage; 0 = 10
	SocketTimeout                      time.Duration // controller.socket.timeout.ms; default 30 s
	RetryBackoff                       time.Duration // backoff between send retries; default 100 ms
	// InterBrokerProtocolVersion is inter.broker.protocol.version: it decides whether /feature
	// is enabled and its JSON version (features.go); "" is the default (latest).
	InterBrokerProtocolVersion string
	// Features is this broker's finalized-feature cache, which feature versioning waits on
	// (features.go); nil: no wait, and /feature is read instead.
	Features FeatureCache
	// ZkConnectionTimeout bounds the failover's wait for Features (zookeeper.connection.timeout.ms);
	// 0 = 18 s.
	ZkConnectionTimeout time.Duration
	Log                 *logrus.Entry
}

func (c *Config) setDefaults() {
	if c.InterBrokerListenerName == "" {
		c.InterBrokerListenerName = "PLAINTEXT"
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = 30 * time.Second
	}
	if c.LeaderImbalanceCheckInterval <= 0 {
		c.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if c.LeaderImbalancePerBrokerPercentage <= 0 {
		c.LeaderImbalancePerBrokerPercentage = 10
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	if c.Log == nil {
		l := logrus.New()
		l.SetLevel(logrus.PanicLevel)
		c.Log = logrus.NewEntry(l)
	}
	c.Log = c.Log.WithFields(logrus.Fields{"component": "controller", "broker": c.BrokerID})
}

// electionStore is what the campaign needs beyond the event loop's store.
type electionStore interface {
	store
	TryElectController(brokerID int32) (epoch int32, epochZkVersion int32, err error)
	ResignController(brokerID int32) error
	SessionEvents() <-chan zkmeta.SessionEvent
}

// Controller is KafkaController. Run drives it; IsActive, Epoch and the request entry points
// (AlterPartition, ControlledShutdown, ElectLeaders) are safe to call from any goroutine.
type Controller struct {
	cfg  Config
	zk   electionStore
	dial dialFunc
	log  *logrus.Entry

	active  atomic.Bool
	epoch   atomic.Int32
	session atomic.Int64                      // the ZooKeeper session of the current term
	metrics atomic.Pointer[controllerMetrics] // metrics.go; nil until RegisterMetrics
	events  *eventTracker                     // the event queue as the internals view shows it

	mu struct {
		sync.Mutex
		loop *eventLoop // the current term's loop while active
		// uncleanDefault is the broker's unclean.leader.election.enable as changed
		// dynamically (SetDefaultUncleanLeaderElection); nil: cfg's.
		uncleanDefault *bool
	}
}

// New returns a controller for this broker; it does nothing until Run.
func New(cfg Config, zk *zkmeta.Client) *Controller {
	return newController(cfg, zk, kclientDial)
}

func newController(cfg Config, zk electionStore, dial dialFunc) *Controller {
	cfg.setDefaults()
	return &Controller{cfg: cfg, zk: zk, dial: dial, log: cfg.Log, events: newEventTracker()}
}

// IsActive reports whether this broker is the active controller: a term is running and
// the ZooKeeper session it was elected in is still there (a controller that lost its
// session stops acting at once, even before its loop has resigned).
func (c *Controller) IsActive() bool {
	return c.active.Load() && c.zk.SessionID() == c.session.Load()
}

// Epoch is the controller epoch of the current (or last) term; 0 before the first.
func (c *Controller) Epoch() int32 { return c.epoch.Load() }

// Run campaigns for /controller and runs the event loop while elected, re-campaigning after
// each resignation, until ctx is done. It returns once every goroutine it started has ended.
func (c *Controller) Run(ctx context.Context) {
	sessionEvents := c.zk.SessionEvents()
	backoff := func() bool { return sleepCtx(ctx, c.cfg.RetryBackoff) }
	for ctx.Err() == nil {
		id, ch, err := c.zk.WatchController()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, zkmeta.ErrClosed) {
				return
			}
			c.log.WithError(err).Warn("cannot read /controller; retrying")
			backoff()
			continue
		}
		if id == -1 {
			epoch, epochZkVersion, err := c.zk.TryElectController(c.cfg.BrokerID)
			switch {
			case err == nil:
				if c.lead(ctx, epoch, epochZkVersion, sessionEvents) {
					// The term ended on an error: do not hammer ZooKeeper with elections.
					sleepCtx(ctx, termErrorBackoff)
				}
				continue
			case errors.Is(err, zkmeta.ErrControllerExists):
				c.log.WithError(err).Debug("lost controller election")
			case errors.Is(err, zkmeta.ErrClosed):
				return
			default:
				c.log.WithError(err).Warn("controller election failed; retrying")
				backoff()
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-sessionEvents:
			// New session or expiry: re-read /controller.
		}
	}
}

// termErrorBackoff is the pause before campaigning again after a term that ended on an error.
const termErrorBackoff = time.Second

// lead runs one term as controller (onControllerFailover … onControllerResignation). It
// reports whether the term ended on an error other than losing the controllership.
func (c *Controller) lead(ctx context.Context, epoch, epochZkVersion int32, sessionEvents <-chan zkmeta.SessionEvent) bool {
	c.log.WithFields(logrus.Fields{"controller_epoch": epoch, "epoch_zk_version": epochZkVersion}).Info("became active controller")
	termCtx, cancel := context.WithCancel(ctx)
	channels := newChannelManager(c.cfg.BrokerID, c.cfg.InterBrokerListenerName, c.cfg.SocketTimeout, c.cfg.RetryBackoff, c.dial, c.log)
	loop := newEventLoop(c.cfg, c.zk, channels, epoch, epochZkVersion, termCtx)
	loop.metrics = c.metrics.Load()
	loop.events = c.events
	c.events.term(epoch)
	c.epoch.Store(epoch)
	c.session.Store(loop.session)
	c.mu.Lock()
	if d := c.mu.uncleanDefault; d != nil {
		loop.cfg.UncleanLeaderElectionEnable = *d // the loop has not started: no race
	}
	c.mu.loop = loop
	c.mu.Unlock()
	c.active.Store(true)

	err := loop.run(termCtx, sessionEvents)

	// onControllerResignation: stop acting at once, then release resources.
	c.active.Store(false)
	c.mu.Lock()
	c.mu.loop = nil
	c.mu.Unlock()
	cancel()
	loop.stopTimers()
	loop.watchWG.Wait()
	channels.shutdown()
	c.events.stopped()
	close(loop.done)
	if ctx.Err() == nil {
		// Kafka's maybeResign: give up /controller if this session still holds it, so that a
		// term ended by an error does not leave the cluster without an active controller.
		if rerr := c.zk.ResignController(c.cfg.BrokerID); rerr != nil {
			c.log.WithError(rerr).Warn("cannot delete /controller after resigning")
		}
	}
	c.log.WithError(err).WithField("controller_epoch", epoch).Info("resigned as controller")
	return ctx.Err() == nil && !errors.Is(err, errControllerChanged) && !errors.Is(err, errSessionLost) &&
		!errors.Is(err, zkmeta.ErrControllerMoved) && !errors.Is(err, zkmeta.ErrSessionExpired)
}

// AlterPartition handles a leader's AlterPartition request (API 56) on the controller broker:
// the request is processed in order with the other controller events. A broker that is not
// the active controller answers NOT_CONTROLLER.
func (c *Controller) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp, code := askLoop(ctx, c, notControllerCode, func(reply chan *kmsg.AlterPartitionResponse) event {
		return alterPartitionEvent{req: req, reply: reply}
	})
	if code != 0 {
		return alterPartitionError(req, code)
	}
	return resp
}

var notControllerCode = kerr.NotController.Code
