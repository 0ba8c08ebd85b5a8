package broker

// broker.go mirrors kafka.server.KafkaServer: the start-up and shut-down order of one
// ZooKeeper-mode broker.
//
// Start:    ZooKeeper session → persistent top-level paths → cluster id → broker id (config,
//           meta.properties, or /brokers/seqid) → dynamic broker configs (/config/brokers,
//           dynamic_config.go) → LogManager (load + background tasks) →
//           ReplicaManager, MetadataCache, KafkaApis → bind every listener (port 0 binds a
//           free port) and serve → register /brokers/ids/<id> with the bound ports (its
//           czxid is the broker epoch) → controller election loop.
// Shutdown: controlled shutdown (if controlled.shutdown.enable, the controller moves our
//           leaderships away) → controller → stop accepting and close connections →
//           ReplicaManager → LogManager (flush, checkpoints, clean-shutdown marker) → close
//           the ZooKeeper session (the ephemeral registration goes at once). Idempotent;
//           waits for every goroutine. Kafka stops its controller after the LogManager;
//           samsa stops it first so it sends nothing to listeners that are closing.
//
// After a ZooKeeper session expiry the broker re-registers under the new session
// (KafkaServer's ZK state-change handler); the controller re-elects on its own.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/controller"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/internal/metrics"
	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// ErrAllLogDirsOffline is the Err of a broker stopped because no log dir is left (Kafka
// halts: "Shutdown broker because all log dirs in ... have failed").
var ErrAllLogDirsOffline = errors.New("broker: all log dirs have failed")

// boundListener is one `listeners` entry after bind.
type boundListener struct {
	cfg    config.Listener
	ln     net.Listener
	port   int32
	server *SocketServer
	sec    *ListenerSecurity // nil: PLAINTEXT
}

// Broker is KafkaServer. New builds it without I/O; Start brings it up; Shutdown stops it.
// Methods are safe for concurrent use once Start returned.
type Broker struct {
	cfg *config.Config
	log *logrus.Entry

	mu struct {
		sync.Mutex
		starting chan struct{} // closed when Start returned
		stopping chan struct{} // closed when Shutdown finished
	}

	// Set by Start (read-only afterwards).
	zk        *zkmeta.Client
	clusterID string
	brokerID  int32
	logs      *logstore.Manager
	replicas  *ReplicaManager
	metadata  *MetadataCache
	apis      *APIs
	admin     *adminState
	ctrl      *controller.Controller
	listeners []*boundListener      // guarded by listenersMu once Start returned (dynamic_listeners.go)
	scram     *scramCredentialCache // SCRAM credentials of /config/users (scram_credentials.go)
	// dynConfig is the configuration in force: static file + /config/brokers (dynamic_config.go).
	dynConfig *DynamicBrokerConfig
	// ipQuotas receives /config/ips changes (ConnectionQuotas); nil ignores them.
	ipQuotas interface{ IPConfigChanged(ip string) error }
	// dialer is the client side of the inter-broker listener (TLS, SASL) every connection to
	// another broker uses; nil dials plain TCP.
	dialer *kclient.Dialer
	// tlsReloaders swap each TLS listener's key and trust stores (listener_security.go).
	tlsReloaders map[string]*serverTLSReloader

	runCtx    context.Context // background work; cancelled by Shutdown
	runCancel context.CancelFunc
	ctrlStop  context.CancelFunc
	ctrlDone  chan struct{}
	wg        sync.WaitGroup // socket servers, session watcher, failure watcher

	zkCloseOnce sync.Once
	failOnce    sync.Once

	// fs is the log dirs' filesystem (nil: the OS); a seam for fault-injection tests.
	fs   logstore.FS
	done chan struct{} // closed when the broker fails on its own (Err says why)
	err  error

	debug        *debugServer      // samsa.debug.listener (pprof); nil when off (debug.go)
	metrics      *metrics.Registry // the metrics registry (http_listener.go)
	http         *debugServer      // samsa.http.listener (http_listener.go)
	stateChanges *stateChangeLog   // samsa.state.change.log.file and the tail (statechange_log.go)

	// listenersMu guards listeners, which dynamic listener updates change at runtime;
	// listenersClosed stops them adding any once shutdown has begun.
	listenersMu     sync.RWMutex
	listenersClosed bool
}

// New validates what start-up needs and returns a broker that is not started.
func New(cfg *config.Config, log *logrus.Entry) (*Broker, error) {
	if cfg == nil {
		return nil, errors.New("broker: nil config")
	}
	var errs []error
	if cfg.ZookeeperConnect == "" {
		errs = append(errs, errors.New("broker: zookeeper.connect is required"))
	}
	if len(cfg.Listeners) == 0 {
		errs = append(errs, errors.New("broker: listeners is empty"))
	}
	if len(cfg.LogDirs) == 0 {
		errs = append(errs, errors.New("broker: log.dirs is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	b := &Broker{cfg: cfg, log: log.WithField("component", "kafka.server"), brokerID: cfg.BrokerID, done: make(chan struct{})}
	return b, nil
}

// ID is the broker id (known after Start when broker.id=-1).
func (b *Broker) ID() int32 { return b.brokerID }

// ClusterID is /cluster/id (known after Start).
func (b *Broker) ClusterID() string { return b.clusterID }

// Done is closed when the broker stopped on its own (all log dirs failed); Err says why.
// cmd/samsa exits non-zero then, as Kafka halts.
func (b *Broker) Done() <-chan struct{} { return b.done }

// Err is the reason Done was closed, nil before.
func (b *Broker) Err() error {
	select {
	case <-b.done:
		return b.err
	default:
		return nil
	}
}

// Addr returns the dialable address of a listener after Start ("127.0.0.1:PORT" for a
// listener bound to all interfaces), or "" if there is no such listener.
func (b *Broker) Addr(listenerName string) string {
	b.listenersMu.RLock()
	defer b.listenersMu.RUnlock()
	for _, l := range b.listeners {
		if l.cfg.Name == listenerName {
			host := l.cfg.Host
			if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				host = "127.0.0.1"
			}
			return net.JoinHostPort(host, strconv.Itoa(int(l.port)))
		}
	}
	return ""
}

// BrokerEpoch is the czxid of this broker's registration (0 before Start).
func (b *Broker) BrokerEpoch() int64 {
	if b.admin == nil {
		return 0
	}
	return b.admin.brokerEpoch.Load()
}

// Controller is this process's controller (nil before Start).
func (b *Broker) Controller() *controller.Controller { return b.ctrl }

// ZK is the broker's ZooKeeper client (nil before Start); for tests and tools in process.
func (b *Broker) ZK() *zkmeta.Client { return b.zk }

// Metadata is the broker's metadata cache (nil before Start).
func (b *Broker) Metadata() *MetadataCache { return b.metadata }

// Start brings the broker up in Kafka's order. ctx bounds start-up only (the ZooKeeper
// connection and the wait for a stale registration); the broker runs until Shutdown. On
// error everything started so far is stopped again.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	if b.mu.starting != nil || b.mu.stopping != nil {
		b.mu.Unlock()
		return errors.New("broker: already started or shut down")
	}
	b.mu.starting = make(chan struct{})
	defer close(b.mu.starting)
	b.mu.Unlock()

	if err := b.start(ctx); err != nil {
		b.shutdown()
		return err
	}
	return nil
}

func (b *Broker) start(ctx context.Context) error {
	cfg := b.cfg
	started := time.Now()
	b.runCtx, b.runCancel = context.WithCancel(context.Background())
	if cfg.DebugListener != "" { // first, so start-up can be profiled too
		d, err := startDebugServer(cfg.DebugListener, b.log)
		if err != nil {
			return err
		}
		b.debug = d
	}

	// ZooKeeper session (zookeeper.connection.timeout.ms bounds the first connect).
	connCtx := ctx
	if cfg.ZookeeperConnectionTimeout > 0 {
		var cancel context.CancelFunc
		connCtx, cancel = context.WithTimeout(ctx, cfg.ZookeeperConnectionTimeout)
		defer cancel()
	}
	sessionTimeout := cfg.ZookeeperSessionTimeout
	if sessionTimeout <= 0 {
		sessionTimeout = 18 * time.Second
	}
	zkSec, err := zkmeta.SecurityFromProps(cfg.Props)
	if err != nil {
		return fmt.Errorf("zookeeper security: %w", err)
	}
	zk, err := zkmeta.ConnectSecure(connCtx, cfg.ZookeeperConnect, sessionTimeout, b.log, zkSec)
	if err != nil {
		return fmt.Errorf("connect to zookeeper %s: %w", cfg.ZookeeperConnect, err)
	}
	b.zk = zk
	if err := zk.CreateTopLevelPaths(); err != nil {
		return fmt.Errorf("create top-level paths: %w", err)
	}
	clusterID, err := zk.GetOrCreateClusterID(zkmeta.NewClusterID())
	if err != nil {
		return fmt.Errorf("cluster id: %w", err)
	}
	b.clusterID = clusterID

	// broker.id: config, else meta.properties, else /brokers/seqid (KafkaServer.getOrGenerateBrokerId).
	metaID, metaFound, err := logstore.ReadMetaBrokerID(cfg.LogDirs)
	if err != nil {
		return fmt.Errorf("read meta.properties: %w", err)
	}
	switch {
	case cfg.BrokerID >= 0 && metaFound && metaID != cfg.BrokerID:
		return fmt.Errorf("broker: configured broker.id %d doesn't match stored broker.id %d in meta.properties; "+
			"if you moved your data, make sure your configured broker.id matches", cfg.BrokerID, metaID)
	case cfg.BrokerID >= 0:
		b.brokerID = cfg.BrokerID
	case metaFound:
		b.brokerID = metaID
	case cfg.BrokerIDGenerationEnable:
		reserved := cfg.ReservedBrokerMaxID
		if reserved <= 0 {
			reserved = 1000
		}
		id, err := zk.GenerateBrokerID(reserved)
		if err != nil {
			return fmt.Errorf("generate broker id: %w", err)
		}
		b.brokerID = id
	default:
		return errors.New("broker: broker.id is not set and broker.id.generation.enable is false")
	}
	b.log = b.log.WithField("broker", b.brokerID)
	log := b.log

	// Dynamic broker configs (KafkaServer.startup: DynamicBrokerConfig.initialize right after
	// the broker id): /config/brokers/<default> and /config/brokers/<id> apply from here on,
	// so the log manager, the listeners and everything below start with them.
	b.dynConfig = NewDynamicBrokerConfig(cfg)
	if err := b.dynConfig.Initialize(zk, b.brokerID, log); err != nil {
		return fmt.Errorf("load dynamic broker configs: %w", err)
	}
	cfg = b.dynConfig.Current()
	b.cfg = cfg

	// Security, before anything serves (KafkaServer.startup builds the credential provider
	// and each listener's channel builder first): a listener whose TLS or SASL settings cannot
	// be honoured stops start-up here, naming the listener.
	b.scram = newScramCredentialCache(zk, log.WithField("component", "scram"))
	if err := b.scram.load(); err != nil {
		return fmt.Errorf("load SCRAM credentials: %w", err)
	}
	secs, err := b.listenerSecurities()
	if err != nil {
		return err
	}
	if b.dialer, err = b.interBrokerDialer(); err != nil {
		return err
	}

	// LogManager.
	props := cfg.Props
	logs, err := logstore.OpenManager(logstore.ManagerConfig{
		Dirs:                              cfg.LogDirs,
		BrokerID:                          b.brokerID,
		ClusterID:                         clusterID,
		BrokerProps:                       props,
		TopicConfig:                       b.topicConfigOrNil,
		RecoveryThreadsPerDir:             cfg.NumRecoveryThreadsPerDataDir,
		FlushCheckpointInterval:           cfg.LogFlushOffsetCheckpointInterval,
		StartOffsetCheckpointInterval:     cfg.LogFlushStartOffsetCheckpointInterval,
		HighWatermarkCheckpointInterval:   cfg.ReplicaHighWatermarkCheckpointInterval,
		RetentionCheckInterval:            cfg.LogRetentionCheckInterval,
		FlushSchedulerInterval:            cfg.LogFlushSchedulerInterval,
		CleanerEnable:                     propBool(props, "log.cleaner.enable", true),
		CleanerBackoff:                    time.Duration(propInt(props, "log.cleaner.backoff.ms", 15000)) * time.Millisecond,
		CleanerDedupeBufferSize:           propInt(props, "log.cleaner.dedupe.buffer.size", 134217728),
		ProducerIDExpiration:              propMs(props, "producer.id.expiration.ms", 86400000),
		ProducerIDExpirationCheckInterval: propMs(props, "producer.id.expiration.check.interval.ms", 600000),
		FS:                                b.fs,
		Log:                               log,
		OnDirOffline: func(dir string) {
			// ReplicaManager.handleLogDirFailure: tell the controller, which sends
			// LeaderAndIsr so the replicas on the dead dir are marked offline.
			log.WithField("log_dir", dir).Error("log dir went offline")
			if _, err := b.zk.CreateLogDirEventNotification(b.brokerID); err != nil {
				log.WithError(err).WithField("log_dir", dir).Error("could not notify the controller of the failed log dir")
			}
		},
		OnAllDirsOffline: func() {
			b.fail(fmt.Errorf("%w: %s", ErrAllLogDirsOffline, strings.Join(cfg.LogDirs, ",")))
		},
	})
	if err != nil {
		return fmt.Errorf("open log dirs: %w", err)
	}
	b.logs = logs
	logs.Start(b.runCtx)

	// ReplicaManager, MetadataCache, KafkaApis.
	b.metadata = NewMetadataCache(b.brokerID)
	b.replicas = NewReplicaManager(ReplicaManagerConfig{
		BrokerID:    b.brokerID,
		Config:      cfg,
		Logs:        logs,
		Metadata:    b.metadata,
		TopicConfig: zk.GetTopicConfig,
		Log:         log,
		BrokerEpoch: b.BrokerEpoch,
		Dialer:      b.dialer,
		// The replication throttles' per-broker rates (replication_quota.go).
		DynamicConfig: b.dynConfig,
	})
	// Replica fetchers, AlterPartition sender, ISR expiration (ReplicaManager.startup).
	b.replicas.Startup(b.runCtx)
	features := &FeatureCache{epoch: -1} // fed by the listener started below (features.go)
	b.ctrl = controller.NewWithDialer(controller.Config{
		BrokerID:                    b.brokerID,
		InterBrokerListenerName:     cfg.InterBrokerListenerName,
		SocketTimeout:               cfg.ControllerSocketTimeout,
		DefaultReplicationFactor:    cfg.DefaultReplicationFactor,
		NumPartitions:               cfg.NumPartitions,
		UncleanLeaderElectionEnable: cfg.UncleanLeaderElectionEnable,
		DisableTopicDeletion:        !cfg.DeleteTopicEnable,
		DisableAutoLeaderRebalance:  !propBool(props, "auto.leader.rebalance.enable", true),
		LeaderImbalanceCheckInterval: time.Duration(propInt(props, "leader.imbalance.check.interval.seconds", 300)) *
			time.Second,
		LeaderImbalancePerBrokerPercentage: int(propInt(props, "leader.imbalance.per.broker.percentage", 10)),
		InterBrokerProtocolVersion:         cfg.InterBrokerProtocolVersion,
		Features:                           features,
		ZkConnectionTimeout:                cfg.ZookeeperConnectionTimeout,
		Log:                                log,
	}, zk, b.dialer)
	b.admin = &adminState{cfg: cfg, brokerID: b.brokerID, zk: zk, ctrl: b.ctrl, controller: b.ctrl, metadata: b.metadata,
		log: log.WithField("component", "admin")}
	b.apis = NewAPIs(cfg, b.brokerID, clusterID, b.replicas, b.metadata, log)
	// FinalizedFeatureChangeListener.initOrThrow (features.go).
	if err := b.startFeatureListener(b.apis, features); err != nil {
		return err
	}
	b.apis.Admin = b.admin
	b.apis.DynamicConfig = b.dynConfig
	// Client quotas (QuotaFactory.instantiate), loaded from /config/users and /config/clients
	// before any listener serves; the config handler keeps them current.
	quotas, err := NewQuotaManagers(cfg, zk, log)
	if err != nil {
		return fmt.Errorf("load client quotas: %w", err)
	}
	b.apis.Quotas = quotas
	// Connection quotas (SocketServer's ConnectionQuotas), with /config/ips loaded.
	connQuotas, err := NewConnectionQuotas(cfg, zk, log)
	if err != nil {
		return fmt.Errorf("connection quotas: %w", err)
	}
	if err := connQuotas.LoadIPConfigs(); err != nil {
		log.WithError(err).Warn("could not load ip connection quotas; /config/ips changes will apply them")
	}
	b.ipQuotas = connQuotas
	b.apis.AutoCreateTopic = b.admin.AutoCreateTopic
	b.apis.IsController = b.ctrl.IsActive
	// The authorizer (authorizer.class.name) with its ACLs loaded, before any listener serves.
	if b.apis.Authorizer, err = newAuthorizer(ctx, b); err != nil {
		return err
	}

	if err := b.startMetrics(); err != nil { // http_listener.go
		return err
	}
	// Listeners: bind all first so a port clash fails start-up before anything is registered.
	for _, l := range cfg.Listeners {
		bl, err := bindListener(l, secs[l.Name], cfg)
		if err != nil {
			return err
		}
		b.listeners = append(b.listeners, bl)
	}
	for _, bl := range b.listeners {
		b.serveListener(bl, cfg, connQuotas)
	}

	// Components that apply dynamic configs live (DynamicBrokerConfig.addReconfigurables),
	// before the config handler starts delivering changes.
	for _, r := range b.reconfigurables() {
		b.dynConfig.AddReconfigurable(r)
	}
	b.dynConfig.AddReconfigurable(connQuotas)
	b.dynConfig.AddReconfigurable(&dynamicListenerConfig{b: b, quotas: connQuotas, log: log.WithField("component", "dynamic.config")})

	// Registration. Subscribe to session events first so no expiry is missed.
	sessionEvents := zk.SessionEvents()
	info := zkmeta.BrokerInfo{ID: b.brokerID, Endpoints: b.advertisedEndpoints(), Rack: cfg.Rack, JMXPort: -1}
	epoch, err := zk.RegisterBroker(ctx, info)
	if err != nil {
		return fmt.Errorf("register broker %d: %w", b.brokerID, err)
	}
	b.admin.brokerEpoch.Store(epoch)
	log.WithFields(logrus.Fields{"broker_epoch": epoch, "endpoints": endpointList(info.Endpoints)}).Info("registered broker")
	b.wg.Add(1)
	go b.watchSession(sessionEvents)
	b.startConfigChangeListener() // ZkConfigManager.startup (config_handler.go)

	// Controller election and event loop.
	ctrlCtx, ctrlStop := context.WithCancel(b.runCtx)
	b.ctrlStop, b.ctrlDone = ctrlStop, make(chan struct{})
	go func() {
		defer close(b.ctrlDone)
		b.ctrl.Run(ctrlCtx)
	}()

	log.WithFields(logrus.Fields{"cluster_id": clusterID, "took": time.Since(started).Round(time.Millisecond)}).Info("started")
	return nil
}

// topicConfigOrNil adapts zkmeta.GetTopicConfig for the LogManager's start-up load.
func (b *Broker) topicConfigOrNil(topic string) map[string]string {
	c, err := b.zk.GetTopicConfig(topic)
	if err != nil {
		b.log.WithError(err).WithField("topic", topic).Warn("could not read topic config; using broker defaults")
		return nil
	}
	return c
}

// advertisedEndpoints are advertised.listeners (defaulting to listeners) with port 0
// replaced by the bound port of the listener of the same name and an empty host by this
// machine's name, as Kafka's EndPoint resolution does.
func (b *Broker) advertisedEndpoints() []zkmeta.Endpoint {
	return b.endpointsFor(b.cfg)
}

// endpointsFor is advertisedEndpoints for cfg, which may be a dynamic update's.
func (b *Broker) endpointsFor(cfg *config.Config) []zkmeta.Endpoint {
	b.listenersMu.RLock()
	defer b.listenersMu.RUnlock()
	adv := cfg.AdvertisedListeners
	if len(adv) == 0 {
		adv = cfg.Listeners
	}
	out := make([]zkmeta.Endpoint, 0, len(adv))
	for _, l := range adv {
		port := l.Port
		if port == 0 {
			for _, bl := range b.listeners {
				if bl.cfg.Name == l.Name {
					port = bl.port
				}
			}
		}
		host := l.Host
		if host == "" {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
		sp := l.SecurityProtocol
		if sp == "" {
			sp = l.Name
		}
		out = append(out, zkmeta.Endpoint{ListenerName: l.Name, Host: host, Port: port, SecurityProtocol: sp})
	}
	return out
}

func endpointList(eps []zkmeta.Endpoint) string {
	s := make([]string, len(eps))
	for i, e := range eps {
		s[i] = e.ConnectionString()
	}
	return strings.Join(s, ",")
}

// watchSession re-registers the broker after a ZooKeeper session expiry
// (KafkaServer's SessionExpirationHandler → registerBroker on the new session).
func (b *Broker) watchSession(events <-chan zkmeta.SessionEvent) {
	defer b.wg.Done()
	for {
		select {
		case <-b.runCtx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			log := b.log.WithField("session_id", fmt.Sprintf("0x%x", ev.SessionID))
			switch ev.Type {
			case zkmeta.SessionExpired:
				log.Warn("zookeeper session expired")
			case zkmeta.SessionReestablished:
				for attempt := 0; b.runCtx.Err() == nil; attempt++ {
					epoch, err := b.zk.ReRegisterBroker(b.runCtx)
					if err == nil {
						b.admin.brokerEpoch.Store(epoch)
						log.WithField("broker_epoch", epoch).Info("re-registered broker after session expiry")
						break
					}
					if errors.Is(err, zkmeta.ErrBrokerIDTaken) {
						b.fail(fmt.Errorf("re-register broker %d: %w", b.brokerID, err))
						return
					}
					log.WithError(err).Warn("re-registering broker failed; retrying")
					select {
					case <-b.runCtx.Done():
					case <-time.After(time.Second):
					}
				}
			}
		}
	}
}

// fail records why the broker must stop and closes Done; cmd/samsa then shuts down and
// exits non-zero.
func (b *Broker) fail(err error) {
	b.failOnce.Do(func() {
		b.err = err
		b.log.WithError(err).Error("broker failed; shutting down")
		close(b.done)
	})
}

// Shutdown stops the broker and waits for its goroutines. Safe to call more than once and
// concurrently (later callers wait for the first), during Start (it waits for Start to
// return), after a failed Start, and without Start. If ZooKeeper
// is unreachable, a stage stuck in a ZooKeeper call (zkmeta retries until reconnected, as
// Kafka does) is released after zookeeper.session.timeout.ms by closing the session early.
func (b *Broker) Shutdown() {
	// A Start in progress finishes first (cancel its ctx to cut it short).
	b.mu.Lock()
	starting := b.mu.starting
	b.mu.Unlock()
	if starting != nil {
		<-starting
	}
	b.shutdown()
}

func (b *Broker) shutdown() {
	b.mu.Lock()
	if b.mu.stopping != nil {
		ch := b.mu.stopping
		b.mu.Unlock()
		<-ch
		return
	}
	b.mu.stopping = make(chan struct{})
	defer close(b.mu.stopping)
	b.mu.Unlock()
	log := b.log
	log.Info("shutting down")

	// Move leadership away first, while everything still runs (KafkaServer.controlledShutdown).
	b.controlledShutdown()

	// Controller first (reverse start order): it resigns and stops sending requests, so it
	// does not retry against our own closing listeners.
	if b.ctrlStop != nil {
		b.ctrlStop()
		b.awaitOrCloseZK(b.ctrlDone, "controller")
	}
	// Stop taking requests: close listeners and connections (in-flight handlers end first).
	listenersDone := make(chan struct{})
	b.listenersMu.Lock()
	b.listenersClosed = true
	closing := b.listeners
	b.listenersMu.Unlock()
	go func() {
		defer close(listenersDone)
		for _, bl := range closing {
			if bl.server != nil {
				bl.server.Close()
			} else if bl.ln != nil {
				bl.ln.Close()
			}
		}
	}()
	b.awaitOrCloseZK(listenersDone, "socket servers")
	if b.runCancel != nil {
		b.runCancel()
	}
	b.wg.Wait()
	// Coordinators (KafkaServer.shutdown: after the socket servers, before the
	// ReplicaManager): appends and loads in flight end first.
	if b.apis != nil {
		b.apis.ShutdownTxnCoordinator()
		b.apis.ShutdownGroupCoordinator()
		b.apis.ShutdownProducerIDManager()
		// No request uses it any more: the listeners are closed.
		closeAuthorizer(b.apis.Authorizer)
	}
	// ReplicaManager: parked produce/fetch waiters fail fast.
	if b.replicas != nil {
		b.replicas.Shutdown()
	}
	// LogManager: flush, checkpoints, clean-shutdown marker.
	if b.logs != nil {
		if err := b.logs.Shutdown(); err != nil {
			log.WithError(err).Error("log manager shutdown failed")
		}
	}
	// A clean close deletes our ephemeral registration at once.
	b.closeZK()
	b.stopMetrics()
	if b.debug != nil {
		b.debug.Close()
	}
	log.Info("shut down completed")
}

// controlledShutdown is KafkaServer.controlledShutdown: ask the controller (found in the
// metadata cache, on the inter-broker listener) to move the leadership of our partitions,
// retrying up to controlled.shutdown.max.retries times with controlled.shutdown.retry.backoff.ms
// between attempts until no partition remains. Failing that, the shutdown goes on unclean.
func (b *Broker) controlledShutdown() {
	if !b.cfg.ControlledShutdownEnable || b.admin == nil || b.metadata == nil || b.runCtx == nil || b.runCtx.Err() != nil {
		return
	}
	select {
	case <-b.done: // failed on its own (log dirs gone): nothing to hand over cleanly
		return
	default:
	}
	retries := propInt(b.cfg.Props, "controlled.shutdown.max.retries", 3)
	backoff := time.Duration(propInt(b.cfg.Props, "controlled.shutdown.retry.backoff.ms", 5000)) * time.Millisecond
	timeout := b.cfg.ControllerSocketTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	listener := b.cfg.InterBrokerListenerName
	if listener == "" {
		listener = "PLAINTEXT"
	}
	log := b.log.WithField("component", "kafka.server")
	log.Info("starting controlled shutdown")
	started := time.Now()
	for remaining := retries; remaining > 0; {
		remaining--
		addr := ""
		if id := b.metadata.ControllerID(); id < 0 {
			log.Info("no controller present in the metadata cache")
		} else if cb, ok := b.metadata.Broker(id); !ok {
			log.WithField("controller_id", id).Info("broker registration for the controller is not available in the metadata cache")
		} else if ep, ok := cb.Endpoint(listener); ok {
			addr = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		}
		if addr != "" {
			done, retry := b.sendControlledShutdown(addr, timeout)
			if done {
				log.WithField("took", time.Since(started).Round(time.Millisecond)).Info("controlled shutdown succeeded")
				return
			}
			if !retry {
				break
			}
		}
		if remaining > 0 {
			time.Sleep(backoff)
			log.WithField("retries_remaining", remaining).Info("retrying controlled shutdown")
		}
	}
	log.Warn("proceeding to do an unclean shutdown as all the controlled shutdown attempts failed")
}

// sendControlledShutdown sends one ControlledShutdown request. done: nothing left to move;
// retry: worth trying again (false when the controller does not serve the API).
func (b *Broker) sendControlledShutdown(addr string, timeout time.Duration) (done, retry bool) {
	log := b.log.WithFields(logrus.Fields{"component": "kafka.server", "controller_addr": addr})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := b.dialer.Dial(ctx, addr, fmt.Sprintf("broker-%d-controlled-shutdown", b.brokerID))
	if err != nil {
		log.WithError(err).Warn("error connecting to the controller for controlled shutdown")
		return false, true
	}
	defer conn.Close()
	req := kmsg.NewPtrControlledShutdownRequest()
	req.BrokerID, req.BrokerEpoch = b.brokerID, b.admin.brokerEpoch.Load()
	r, err := conn.Request(ctx, req)
	if errors.Is(err, kclient.ErrUnsupportedRequest) {
		log.WithError(err).Warn("controller does not serve ControlledShutdown")
		return false, false
	}
	if err != nil {
		log.WithError(err).Warn("error during controlled shutdown")
		return false, true
	}
	resp := r.(*kmsg.ControlledShutdownResponse)
	if resp.ErrorCode != 0 {
		log.WithField("error_code", resp.ErrorCode).Info("controlled shutdown request failed")
		return false, true
	}
	if len(resp.PartitionsRemaining) > 0 {
		log.WithField("remaining_partitions", len(resp.PartitionsRemaining)).Info("partitions remaining to move")
		return false, true
	}
	return true, false
}

// awaitOrCloseZK waits for done; after a session timeout it closes the ZooKeeper client
// (every zkmeta call then fails with ErrClosed) and waits again.
func (b *Broker) awaitOrCloseZK(done <-chan struct{}, what string) {
	if b.zk == nil {
		<-done
		return
	}
	timer := time.NewTimer(b.zk.SessionTimeout())
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	b.log.WithField("stage", what).Warn("shutdown stuck in a ZooKeeper call; closing the ZooKeeper session early")
	b.closeZK()
	<-done
}

func (b *Broker) closeZK() {
	if b.zk == nil {
		return
	}
	b.zkCloseOnce.Do(func() {
		if err := b.zk.Close(); err != nil {
			b.log.WithError(err).Warn("closing zookeeper session failed")
		}
	})
}

func propBool(props map[string]string, key string, def bool) bool {
	if v, ok := props[key]; ok {
		if bv, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return bv
		}
	}
	return def
}

// propMs reads a ...ms key as a duration.
func propMs(props map[string]string, key string, defMs int64) time.Duration {
	return time.Duration(propInt(props, key, defMs)) * time.Millisecond
}

func propInt(props map[string]string, key string, def int64) int64 {
	if v, ok := props[key]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			return n
		}
	}
	return def
}
