// Package config is samsa's KafkaConfig: the broker's configuration under Kafka's own
// property names and 3.7 defaults, read from a YAML file (flat keys) or a Java
// server.properties file, then --override key=value flags, then validated.
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
	BrokerID                  int32
	BrokerIDGenerationEnable  bool
	ReservedBrokerMaxID       int32
	Rack                      string
	Listeners                 []Listener
	AdvertisedListeners       []Listener // defaults to Listeners
	InterBrokerListenerName   string     // defaults to security.inter.broker.protocol (PLAINTEXT)
	LogDirs                   []string
	ZookeeperConnect          string
	ZookeeperSessionTimeout   time.Duration
	ZookeeperConnectionTimout time.Duration

	NumPartitions               int32
	DefaultReplicationFactor    int16
	MinInSyncReplicas           int32
	AutoCreateTopicsEnable      bool
	DeleteTopicEnable           bool
	UncleanLeaderElectionEnable bool
	SocketRequestMaxBytes       int32
	RequestTimeout              time.Duration
	ControllerSocketTimeout     time.Duration
	ControlledShutdownEnable    bool

	NumRecoveryThreadsPerDataDir           int
	LogFlushOffsetCheckpointInterval       time.Duration
	LogFlushStartOffsetCheckpointInterval  time.Duration
	ReplicaHighWatermarkCheckpointInterval time.Duration
	LogRetentionCheckInterval              time.Duration
	LogFlushSchedulerInterval              time.Duration

	ReplicaLagTimeMax    time.Duration
	ReplicaFetchMaxBytes int32
	ReplicaFetchWaitMax  time.Duration
	ReplicaFetchMinBytes int32
	ReplicaFetchBackoff  time.Duration
	NumReplicaFetchers   int

	GroupInitialRebalanceDelay    time.Duration
	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16

	LogFormat string // samsa's own: "text" (default) or "json"
	LogLevel  string // samsa's own: "info" (default)

	// Props is every key with its effective value as a string (Kafka's spelling, e.g.
	// "log.retention.hours" -> "168"). Use it for topic-level defaults: logstore resolves
	// topic override -> broker key -> Kafka default from it.
	Props map[string]string
}
