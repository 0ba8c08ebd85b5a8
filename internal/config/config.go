// Package config is samsa's KafkaConfig: the broker's configuration under Kafka's own
// property names and 3.7 defaults, read from a YAML file (flat keys) or a Java
// server.properties file, then --override key=value flags, then validated.
//
// A YAML file maps property names to scalars; a list is written as Kafka's comma-separated
// string or as a YAML sequence:
//
//	broker.id: 1
//	zookeeper.connect: 127.0.0.1:2181/samsa
//	listeners: PLAINTEXT://127.0.0.1:9092
//	log.dirs: [/data/a, /data/b]
//
// A file ending in .properties, or one YAML does not read as a mapping, is parsed as
// java.util.Properties. Keys samsa adds are prefixed samsa. (samsa.log.format: text|json,
// samsa.log.level). Unknown keys are warnings (Kafka's AbstractConfig.logUnused); invalid
// values are one error naming every key and value (defs.go holds types, defaults and ranges;
// load.go the rules across keys, from KafkaConfig.validateValues).
package config

import "time"

// Listener is one entry of `listeners` / `advertised.listeners`: NAME://host:port.
type Listener struct {
	Name             string // e.g. PLAINTEXT
	Host             string
	Port             int32  // 0 in `listeners` means "bind a free port"
	SecurityProtocol string // from listener.security.protocol.map
}

// Config is the effective broker configuration. Typed fields hold what samsa's code reads;
// Props holds every key (known ones with their effective value as Kafka would print it,
// unknown ones as given) so topic-level defaults (log.*) and DescribeConfigs can be served.
//
// A Config is read-only once built; share it freely.
type Config struct {
	BrokerID                     int32
	BrokerIDGenerationEnable     bool
	ReservedBrokerMaxID          int32
	Rack                         string
	Listeners                    []Listener
	AdvertisedListeners          []Listener // defaults to Listeners
	InterBrokerListenerName      string     // defaults to security.inter.broker.protocol (PLAINTEXT)
	LogDirs                      []string
	ZookeeperConnect             string
	ZookeeperSessionTimeout      time.Duration
	ZookeeperConnectionTimeout   time.Duration // defaults to ZookeeperSessionTimeout
	ZookeeperMaxInFlightRequests int

	// ListenerSecurityProtocolMap maps a listener name (upper case) to its security protocol.
	ListenerSecurityProtocolMap map[string]string
	ControlPlaneListenerName    string // "" unless set
	InterBrokerProtocolVersion  string

	NumPartitions               int32
	DefaultReplicationFactor    int16
	MinInSyncReplicas           int32
	AutoCreateTopicsEnable      bool
	DeleteTopicEnable           bool
	UncleanLeaderElectionEnable bool
	SocketRequestMaxBytes       int32
	MessageMaxBytes             int32
	FetchMaxBytes               int32
	ConnectionsMaxIdle          time.Duration
	RequestTimeout              time.Duration
	ControllerSocketTimeout     time.Duration
	ControlledShutdownEnable    bool

	NumRecoveryThreadsPerDataDir           int
	LogFlushOffsetCheckpointInterval       time.Duration
	LogFlushStartOffsetCheckpointInterval  time.Duration
	ReplicaHighWatermarkCheckpointInterval time.Duration
	LogRetentionCheckInterval              time.Duration
	LogFlushSchedulerInterval              time.Duration

	ReplicaLagTimeMax            time.Duration
	ReplicaFetchMaxBytes         int32
	ReplicaFetchWaitMax          time.Duration
	ReplicaFetchMinBytes         int32
	ReplicaFetchBackoff          time.Duration
	NumReplicaFetchers           int
	ReplicaFetchResponseMaxBytes int32
	ReplicaSocketTimeout         time.Duration

	GroupInitialRebalanceDelay    time.Duration
	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16

	LogFormat string // samsa's own: "text" (default) or "json"
	LogLevel  string // samsa's own: "info" (default)
	// DebugListener is samsa.debug.listener: host:port serving net/http/pprof, "" = off.
	DebugListener string
	// HTTPListener is samsa.http.listener: host:port serving /metrics (Prometheus text
	// format under the JMX exporter's Kafka names), "" = off.
	HTTPListener string
	// StateChangeLogFile is samsa.state.change.log.file: the file state-change entries are
	// also written to (Kafka's state-change.log), "" = none.
	StateChangeLogFile string

	// Static is every key set in the file or by --override, normalized (source
	// STATIC_BROKER_CONFIG in DescribeConfigs); a key absent here has its Kafka default.
	Static map[string]string

	// Props is every key with its effective value as a string (Kafka's spelling, e.g.
	// "log.retention.hours" -> "168"). Use it for topic-level defaults: logstore resolves
	// topic override -> broker key -> Kafka default from it. Keys whose Kafka default is null
	// are absent unless set, except the synonyms Kafka resolves by unit, which hold the
	// resolved value: log.retention.ms (> .minutes > .hours), log.roll.ms (> .hours),
	// log.roll.jitter.ms (> .hours), log.flush.interval.ms (> log.flush.scheduler.interval.ms).
	Props map[string]string
}
