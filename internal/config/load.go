package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Load reads the broker config file at path (YAML with Kafka's flat property names, or a Java
// server.properties file: by extension .properties, else by content), applies overrides
// ("key=value", as `--override` gives them; later ones win), then Kafka's defaults, and
// validates. Warnings name unknown keys; the error joins every invalid value.
func Load(path string, overrides []string) (*Config, []string, error) {
	raw, err := ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("invalid --override %q: expected key=value", o)
		}
		raw[k] = v
	}
	return FromMap(raw)
}

// ReadFile reads a config file into raw key/value strings without defaults or validation.
func ReadFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	text := string(data)
	var raw map[string]string
	switch ext := strings.ToLower(filepath.Ext(path)); {
	case ext == ".properties":
		raw, err = ParseProperties(text)
	case ext == ".yaml" || ext == ".yml":
		if raw, err = ParseYAML(text); err == nil && raw == nil {
			err = errors.New("the document is not a mapping of property names to values")
		}
	default:
		// A file that YAML reads as a mapping is YAML (a properties file written with
		// `key: value` lines means the same either way); anything else is properties.
		if raw, err = ParseYAML(text); err != nil || raw == nil {
			raw, err = ParseProperties(text)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	return raw, nil
}

// ParseYAML reads a YAML mapping of Kafka property names to scalars. Lists (sequences of
// scalars) become Kafka's comma-separated lists; nested mappings are flattened with dots
// (log: {dirs: x} is log.dirs: x); null means unset. An empty document gives an empty map; a
// document that is not a mapping gives (nil, nil).
func ParseYAML(text string) (map[string]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	out := make(map[string]string)
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return out, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil
	}
	if err := flattenYAML("", root, out); err != nil {
		return nil, err
	}
	return out, nil
}

func flattenYAML(prefix string, n *yaml.Node, out map[string]string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				continue
			}
			if _, dup := out[key]; dup {
				return fmt.Errorf("line %d: key %s given twice", k.Line, key)
			}
			out[key] = v.Value // the scalar as written: 0.50 stays 0.50, 1e3 stays 1e3
		case yaml.SequenceNode:
			var items []string
			for _, it := range v.Content {
				if it.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: list %s may hold scalars only", it.Line, key)
				}
				items = append(items, it.Value)
			}
			if _, dup := out[key]; dup {
				return fmt.Errorf("line %d: key %s given twice", k.Line, key)
			}
			out[key] = strings.Join(items, ",")
		case yaml.MappingNode:
			if err := flattenYAML(key, v, out); err != nil {
				return err
			}
		default:
			return fmt.Errorf("line %d: unsupported value for %s", v.Line, key)
		}
	}
	return nil
}

// FromMap builds a Config from raw key/value strings (a parsed file plus overrides): it
// applies Kafka's defaults and validates. Unknown keys give warnings and are kept in Props as
// given; invalid values give one joined error naming each key and value.
func FromMap(raw map[string]string) (*Config, []string, error) {
	var warnings []string
	var errs []error
	static := make(map[string]string, len(raw))
	props := make(map[string]string, len(defs)+len(raw))

	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		def, ok := defsByName[k]
		if !ok {
			if !isKnown(k) {
				// Kafka's AbstractConfig.logUnused wording.
				warnings = append(warnings, fmt.Sprintf("The configuration '%s' was supplied but isn't a known config.", k))
			}
			static[k], props[k] = v, v
			continue
		}
		nv, err := def.normalize(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		static[k] = nv
	}
	for _, x := range defs {
		if v, ok := static[x.Name]; ok {
			props[x.Name] = v
		} else if x.HasDefault {
			props[x.Name] = x.Default
		}
	}
	// An invalid key keeps its default in props, so the checks across keys below still run
	// and every error is reported at once.
	resolveSynonyms(props, static)
	c := &Config{Static: static, Props: props}
	errs = append(errs, c.fill(props, static)...)
	if len(errs) == 0 {
		errs = append(errs, checkSecurity(c, props)...)
	}
	warnings = append(warnings, securityWarnings(static)...)
	if len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	return c, warnings, nil
}

// resolveSynonyms writes the resolved value of each unit-specific synonym group into its
// primary (ms) key, as KafkaConfig.logRetentionTimeMillis and friends resolve them.
func resolveSynonyms(props, static map[string]string) {
	const hour, minute = int64(3600000), int64(60000)
	if _, ok := static["log.retention.ms"]; !ok {
		if m, ok := static["log.retention.minutes"]; ok {
			props["log.retention.ms"] = strconv.FormatInt(mul(atoi64(m), minute), 10)
		} else {
			props["log.retention.ms"] = strconv.FormatInt(mul(atoi64(props["log.retention.hours"]), hour), 10)
		}
	}
	// Kafka: any negative retention means "forever", reported as -1.
	if atoi64(props["log.retention.ms"]) < 0 {
		props["log.retention.ms"] = "-1"
	}
	if _, ok := static["log.roll.ms"]; !ok {
		props["log.roll.ms"] = strconv.FormatInt(mul(atoi64(props["log.roll.hours"]), hour), 10)
	}
	if _, ok := static["log.roll.jitter.ms"]; !ok {
		props["log.roll.jitter.ms"] = strconv.FormatInt(mul(atoi64(props["log.roll.jitter.hours"]), hour), 10)
	}
	if _, ok := static["log.flush.interval.ms"]; !ok {
		props["log.flush.interval.ms"] = props["log.flush.scheduler.interval.ms"]
	}
}

func mul(a, b int64) int64 {
	if a != 0 && (a*b)/a != b {
		if (a < 0) != (b < 0) {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return a * b
}

func atoi64(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// ms converts a millisecond config to a Duration, saturating (Long.MAX ms means "never").
func ms(s string) time.Duration {
	n := atoi64(s)
	if n > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(n) * time.Millisecond
}

// fill sets the typed fields from validated props and checks the rules that span keys.
func (c *Config) fill(p, static map[string]string) []error {
	var errs []error
	i32 := func(k string) int32 { return int32(atoi64(p[k])) }
	b := func(k string) bool { return p[k] == "true" }

	c.BrokerID = i32("broker.id")
	c.BrokerIDGenerationEnable = b("broker.id.generation.enable")
	c.ReservedBrokerMaxID = i32("reserved.broker.max.id")
	if c.BrokerIDGenerationEnable {
		if c.BrokerID < -1 || c.BrokerID > c.ReservedBrokerMaxID {
			errs = append(errs, fmt.Errorf("invalid value %d for configuration broker.id: broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id (%d)", c.BrokerID, c.ReservedBrokerMaxID))
		}
	} else if c.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("invalid value %d for configuration broker.id: broker.id must be greater than or equal to 0 when broker.id.generation.enable is false", c.BrokerID))
	}
	c.Rack = p["broker.rack"]

	if roles := p["process.roles"]; roles != "" {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration process.roles: samsa runs in ZooKeeper mode only; leave it empty", roles))
	}
	c.ZookeeperConnect = strings.TrimSpace(p["zookeeper.connect"])
	if c.ZookeeperConnect == "" {
		errs = append(errs, errors.New(`missing required configuration "zookeeper.connect" which has no default value`))
	}
	c.ZookeeperSessionTimeout = ms(p["zookeeper.session.timeout.ms"])
	c.ZookeeperConnectionTimeout = c.ZookeeperSessionTimeout
	if v, ok := p["zookeeper.connection.timeout.ms"]; ok {
		c.ZookeeperConnectionTimeout = ms(v)
	}
	c.ZookeeperMaxInFlightRequests = int(atoi64(p["zookeeper.max.in.flight.requests"]))

	// Listeners.
	protoMap, err := ParseSecurityProtocolMap(p["listener.security.protocol.map"])
	if err != nil {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration listener.security.protocol.map: %w", p["listener.security.protocol.map"], err))
		return errs
	}
	c.ListenerSecurityProtocolMap = protoMap
	c.Listeners, err = ParseListeners(p["listeners"], protoMap)
	if err != nil {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration listeners: %w", p["listeners"], err))
	} else if len(c.Listeners) == 0 {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration listeners: at least one listener is required", p["listeners"]))
	}
	if v, ok := p["advertised.listeners"]; ok {
		c.AdvertisedListeners, err = ParseListeners(v, protoMap)
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for configuration advertised.listeners: %w", v, err))
		}
	} else {
		c.AdvertisedListeners = append([]Listener(nil), c.Listeners...)
	}
	_, ibln := static["inter.broker.listener.name"]
	_, sibp := static["security.inter.broker.protocol"]
	switch {
	case ibln && sibp:
		errs = append(errs, errors.New("only one of inter.broker.listener.name and security.inter.broker.protocol should be set"))
	case ibln:
		c.InterBrokerListenerName = strings.ToUpper(strings.TrimSpace(p["inter.broker.listener.name"]))
	default:
		// The listener named like the protocol (Kafka: ListenerName.forSecurityProtocol).
		c.InterBrokerListenerName = p["security.inter.broker.protocol"]
	}
	if v, ok := p["control.plane.listener.name"]; ok {
		c.ControlPlaneListenerName = strings.ToUpper(strings.TrimSpace(v))
	}
	if len(c.Listeners) > 0 && len(errs) == 0 {
		errs = append(errs, validateListeners(c.Listeners, c.AdvertisedListeners, c.InterBrokerListenerName)...)
	}
	c.InterBrokerProtocolVersion = p["inter.broker.protocol.version"]

	// log.dirs falls back to log.dir.
	if v, ok := p["log.dirs"]; ok {
		c.LogDirs = splitList(v)
	} else {
		c.LogDirs = splitList(p["log.dir"])
	}
	if len(c.LogDirs) == 0 {
		errs = append(errs, errors.New("invalid value for configuration log.dirs: at least one log directory is required"))
	}

	c.NumPartitions = i32("num.partitions")
	rf := atoi64(p["default.replication.factor"])
	if rf < 1 || rf > math.MaxInt16 {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration default.replication.factor: must be between 1 and %d", p["default.replication.factor"], math.MaxInt16))
	}
	c.DefaultReplicationFactor = int16(rf)
	c.MinInSyncReplicas = i32("min.insync.replicas")
	c.AutoCreateTopicsEnable = b("auto.create.topics.enable")
	c.DeleteTopicEnable = b("delete.topic.enable")
	c.UncleanLeaderElectionEnable = b("unclean.leader.election.enable")
	c.SocketRequestMaxBytes = i32("socket.request.max.bytes")
	c.MessageMaxBytes = i32("message.max.bytes")
	c.FetchMaxBytes = i32("fetch.max.bytes")
	c.ConnectionsMaxIdle = ms(p["connections.max.idle.ms"])
	c.RequestTimeout = ms(p["request.timeout.ms"])
	c.ControllerSocketTimeout = ms(p["controller.socket.timeout.ms"])
	c.ControlledShutdownEnable = b("controlled.shutdown.enable")

	c.NumRecoveryThreadsPerDataDir = int(atoi64(p["num.recovery.threads.per.data.dir"]))
	c.LogFlushOffsetCheckpointInterval = ms(p["log.flush.offset.checkpoint.interval.ms"])
	c.LogFlushStartOffsetCheckpointInterval = ms(p["log.flush.start.offset.checkpoint.interval.ms"])
	c.ReplicaHighWatermarkCheckpointInterval = ms(p["replica.high.watermark.checkpoint.interval.ms"])
	c.LogRetentionCheckInterval = ms(p["log.retention.check.interval.ms"])
	c.LogFlushSchedulerInterval = ms(p["log.flush.scheduler.interval.ms"])

	c.ReplicaLagTimeMax = ms(p["replica.lag.time.max.ms"])
	c.ReplicaFetchMaxBytes = i32("replica.fetch.max.bytes")
	c.ReplicaFetchWaitMax = ms(p["replica.fetch.wait.max.ms"])
	c.ReplicaFetchMinBytes = i32("replica.fetch.min.bytes")
	c.ReplicaFetchBackoff = ms(p["replica.fetch.backoff.ms"])
	c.NumReplicaFetchers = int(atoi64(p["num.replica.fetchers"]))
	c.ReplicaFetchResponseMaxBytes = i32("replica.fetch.response.max.bytes")
	c.ReplicaSocketTimeout = ms(p["replica.socket.timeout.ms"])
	// KafkaConfig: replica.fetch.wait.max.ms must stay below the socket timeout and the lag time.
	if c.ReplicaFetchWaitMax > c.ReplicaSocketTimeout {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration replica.fetch.wait.max.ms: should always be less than or equal to replica.socket.timeout.ms (%s)", p["replica.fetch.wait.max.ms"], p["replica.socket.timeout.ms"]))
	}
	if c.ReplicaFetchWaitMax > c.ReplicaLagTimeMax {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration replica.fetch.wait.max.ms: should always be less than or equal to replica.lag.time.max.ms (%s)", p["replica.fetch.wait.max.ms"], p["replica.lag.time.max.ms"]))
	}

	c.GroupInitialRebalanceDelay = ms(p["group.initial.rebalance.delay.ms"])
	c.OffsetsTopicNumPartitions = i32("offsets.topic.num.partitions")
	c.OffsetsTopicReplicationFactor = int16(atoi64(p["offsets.topic.replication.factor"]))

	c.LogFormat = p["samsa.log.format"]
	c.LogLevel = p["samsa.log.level"]
	c.DebugListener = p["samsa.debug.listener"]
	c.HTTPListener = p["samsa.http.listener"]
	c.StateChangeLogFile = p["samsa.state.change.log.file"]
	return errs
}
