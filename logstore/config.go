package logstore

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// LogConfig is a topic's effective log configuration, mirroring Kafka's LogConfig
// (storage/.../log/LogConfig.java). Values come from the topic override, then the broker's
// synonym key, then Kafka 3.7's default (NewLogConfig). Immutable once built: SetConfig on a
// Log swaps the whole value.
type LogConfig struct {
	SegmentBytes       int64 // segment.bytes / log.segment.bytes
	SegmentMs          int64 // segment.ms / log.roll.ms, log.roll.hours
	SegmentJitterMs    int64 // segment.jitter.ms / log.roll.jitter.ms, log.roll.jitter.hours
	SegmentIndexBytes  int32 // segment.index.bytes / log.index.size.max.bytes
	IndexIntervalBytes int32 // index.interval.bytes / log.index.interval.bytes
	FlushMessages      int64 // flush.messages / log.flush.interval.messages
	FlushMs            int64 // flush.ms / log.flush.interval.ms, log.flush.scheduler.interval.ms
	RetentionBytes     int64 // retention.bytes / log.retention.bytes (-1 = unlimited)
	RetentionMs        int64 // retention.ms / log.retention.{ms,minutes,hours} (-1 = forever)
	CleanupPolicy      []string
	FileDeleteDelayMs  int64 // file.delete.delay.ms / log.segment.delete.delay.ms
	Preallocate        bool
	MaxMessageBytes    int32 // max.message.bytes / message.max.bytes
	MinInSyncReplicas  int32
	// UncleanLeaderElectionEnable is the topic's unclean.leader.election.enable.
	UncleanLeaderElectionEnable bool
	CompressionType             string // producer, uncompressed, gzip, snappy, lz4, zstd
	MessageTimestampType        string // CreateTime or LogAppendTime
	// Effective before/after bounds: difference.max.ms stands in while these are unset (3.7 rule).
	MessageTimestampBeforeMaxMs     int64
	MessageTimestampAfterMaxMs      int64
	MessageTimestampDifferenceMaxMs int64
	MessageFormatVersion            string
	MessageDownconversionEnable     bool
	MinCleanableDirtyRatio          float64
	DeleteRetentionMs               int64
	MinCompactionLagMs              int64
	MaxCompactionLagMs              int64
	LocalRetentionMs                int64
	LocalRetentionBytes             int64
	RemoteStorageEnable             bool
	LeaderReplicationThrottled      string
	FollowerReplicationThrottled    string

	// values holds every topic key's effective value as a string, sources where it came from.
	values  map[string]string
	sources map[string]ConfigSource
}

// ConfigSource says where an effective value came from (DescribeConfigs' config_source).
type ConfigSource int8

const (
	SourceDefault      ConfigSource = 5 // DEFAULT_CONFIG
	SourceStaticBroker ConfigSource = 4 // STATIC_BROKER_CONFIG
	SourceTopic        ConfigSource = 1 // TOPIC_CONFIG
)

// Compact reports whether cleanup.policy contains compact.
func (c LogConfig) Compact() bool { return containsStr(c.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy contains delete.
func (c LogConfig) Delete() bool { return containsStr(c.CleanupPolicy, "delete") }

// LogAppendTime reports whether message.timestamp.type is LogAppendTime.
func (c LogConfig) LogAppendTime() bool { return c.MessageTimestampType == "LogAppendTime" }

// Get returns the effective value of a topic-level key as Kafka prints it, and whether the key is known.
func (c LogConfig) Get(key string) (string, bool) {
	if c.values == nil {
		c = DefaultLogConfig()
	}
	v, ok := c.values[key]
	return v, ok
}

// Source returns where the effective value of key came from.
func (c LogConfig) Source(key string) ConfigSource {
	if s, ok := c.sources[key]; ok {
		return s
	}
	return SourceDefault
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

const (
	longMax = math.MaxInt64
	intMax  = math.MaxInt32
)

type cfgKind int

const (
	kLong cfgKind = iota
	kInt
	kBool
	kDouble
	kString
	kList
)

// topicKey describes one topic-level config: its type, 3.7 default, minimum and broker synonyms.
type topicKey struct {
	name     string
	kind     cfgKind
	def      string
	min      float64 // inclusive lower bound for numbers (NaN = none)
	max      float64
	valid    []string // allowed values for strings / list elements
	synonyms []brokerSyn
}

// brokerSyn is a broker key standing for the topic key, with a unit multiplier to ms.
type brokerSyn struct {
	name string
	mult int64
}

var noMin = math.NaN()

var topicKeys = []topicKey{
	{name: "cleanup.policy", kind: kList, def: "delete", valid: []string{"compact", "delete"}, synonyms: []brokerSyn{{"log.cleanup.policy", 1}}},
	{name: "compression.type", kind: kString, def: "producer", valid: []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}, synonyms: []brokerSyn{{"compression.type", 1}}},
	{name: "delete.retention.ms", kind: kLong, def: "86400000", min: 0, synonyms: []brokerSyn{{"log.cleaner.delete.retention.ms", 1}}},
	{name: "file.delete.delay.ms", kind: kLong, def: "60000", min: 0, synonyms: []brokerSyn{{"log.segment.delete.delay.ms", 1}}},
	{name: "flush.messages", kind: kLong, def: "9223372036854775807", min: 1, synonyms: []brokerSyn{{"log.flush.interval.messages", 1}}},
	{name: "flush.ms", kind: kLong, def: "9223372036854775807", min: 0, synonyms: []brokerSyn{{"log.flush.interval.ms", 1}, {"log.flush.scheduler.interval.ms", 1}}},
	{name: "follower.replication.throttled.replicas", kind: kString, def: "", min: noMin},
	{name: "index.interval.bytes", kind: kInt, def: "4096", min: 0, synonyms: []brokerSyn{{"log.index.interval.bytes", 1}}},
	{name: "leader.replication.throttled.replicas", kind: kString, def: "", min: noMin},
	{name: "local.retention.bytes", kind: kLong, def: "-2", min: -2, synonyms: []brokerSyn{{"log.local.retention.bytes", 1}}},
	{name: "local.retention.ms", kind: kLong, def: "-2", min: -2, synonyms: []brokerSyn{{"log.local.retention.ms", 1}}},
	{name: "max.compaction.lag.ms", kind: kLong, def: "9223372036854775807", min: 1, synonyms: []brokerSyn{{"log.cleaner.max.compaction.lag.ms", 1}}},
	{name: "max.message.bytes", kind: kInt, def: "1048588", min: 0, synonyms: []brokerSyn{{"message.max.bytes", 1}}},
	{name: "message.downconversion.enable", kind: kBool, def: "true", min: noMin, synonyms: []brokerSyn{{"log.message.downconversion.enable", 1}}},
	{name: "message.format.version", kind: kString, def: "3.0-IV1", min: noMin, synonyms: []brokerSyn{{"log.message.format.version", 1}}},
	{name: "message.timestamp.after.max.ms", kind: kLong, def: "9223372036854775807", min: 0, synonyms: []brokerSyn{{"log.message.timestamp.after.max.ms", 1}}},
	{name: "message.timestamp.before.max.ms", kind: kLong, def: "9223372036854775807", min: 0, synonyms: []brokerSyn{{"log.message.timestamp.before.max.ms", 1}}},
	{name: "message.timestamp.difference.max.ms", kind: kLong, def: "9223372036854775807", min: 0, synonyms: []brokerSyn{{"log.message.timestamp.difference.max.ms", 1}}},
	{name: "message.timestamp.type", kind: kString, def: "CreateTime", valid: []string{"CreateTime", "LogAppendTime"}, synonyms: []brokerSyn{{"log.message.timestamp.type", 1}}},
	{name: "min.cleanable.dirty.ratio", kind: kDouble, def: "0.5", min: 0, max: 1, synonyms: []brokerSyn{{"log.cleaner.min.cleanable.ratio", 1}}},
	{name: "min.compaction.lag.ms", kind: kLong, def: "0", min: 0, synonyms: []brokerSyn{{"log.cleaner.min.compaction.lag.ms", 1}}},
	{name: "min.insync.replicas", kind: kInt, def: "1", min: 1, synonyms: []brokerSyn{{"min.insync.replicas", 1}}},
	{name: "preallocate", kind: kBool, def: "false", min: noMin, synonyms: []brokerSyn{{"log.preallocate", 1}}},
	{name: "remote.storage.enable", kind: kBool, def: "false", min: noMin},
	{name: "retention.bytes", kind: kLong, def: "-1", min: noMin, synonyms: []brokerSyn{{"log.retention.bytes", 1}}},
	{name: "retention.ms", kind: kLong, def: "604800000", min: -1, synonyms: []brokerSyn{{"log.retention.ms", 1}, {"log.retention.minutes", 60000}, {"log.retention.hours", 3600000}}},
	{name: "segment.bytes", kind: kInt, def: "1073741824", min: 14, synonyms: []brokerSyn{{"log.segment.bytes", 1}}},
	{name: "segment.index.bytes", kind: kInt, def: "10485760", min: 4, synonyms: []brokerSyn{{"log.index.size.max.bytes", 1}}},
	{name: "segment.jitter.ms", kind: kLong, def: "0", min: 0, synonyms: []brokerSyn{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", 3600000}}},
	{name: "segment.ms", kind: kLong, def: "604800000", min: 1, synonyms: []brokerSyn{{"log.roll.ms", 1}, {"log.roll.hours", 3600000}}},
	{name: "unclean.leader.election.enable", kind: kBool, def: "false", min: noMin, synonyms: []brokerSyn{{"unclean.leader.election.enable", 1}}},
}

var topicKeyIndex = func() map[string]*topicKey {
	m := make(map[string]*topicKey, len(topicKeys))
	for i := range topicKeys {
		m[topicKeys[i].name] = &topicKeys[i]
	}
	return m
}()

// TopicConfigNames returns the topic-level keys samsa knows, sorted.
func TopicConfigNames() []string {
	out := make([]string, 0, len(topicKeys))
	for _, k := range topicKeys {
		out = append(out, k.name)
	}
	sort.Strings(out)
	return out
}

// BrokerSynonym returns the broker key whose value is the default of a topic key
// ("retention.ms" -> "log.retention.ms"), or "" if there is none.
func BrokerSynonym(topicKey string) string {
	k, ok := topicKeyIndex[topicKey]
	if !ok || len(k.synonyms) == 0 {
		return ""
	}
	return k.synonyms[0].name
}

// BrokerSynonyms returns every broker key standing for a topic key, highest precedence first
// (log.retention.ms, log.retention.minutes, log.retention.hours).
func BrokerSynonyms(topicKey string) []string {
	k, ok := topicKeyIndex[topicKey]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(k.synonyms))
	for _, s := range k.synonyms {
		out = append(out, s.name)
	}
	return out
}

// DefaultLogConfig is Kafka 3.7's topic defaults with no broker or topic overrides.
func DefaultLogConfig() LogConfig {
	c, err := NewLogConfig(nil, nil)
	if err != nil {
		panic(err) // the defaults table is ours; it must parse
	}
	return c
}

// ValidateTopicConfig checks topic overrides (CreateTopics / AlterConfigs): unknown keys and
// bad values are errors wrapping ErrInvalidConfig.
func ValidateTopicConfig(overrides map[string]string) error {
	var errs []error
	for k, v := range overrides {
		tk, ok := topicKeyIndex[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, k))
			continue
		}
		if _, err := parseValue(tk, k, v, 1); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NewLogConfig resolves every topic key: topic override > broker synonym (in precedence
// order, e.g. log.retention.ms > .minutes > .hours) > Kafka's default. Invalid values are
// errors wrapping ErrInvalidConfig that name the key and value. Unknown topic keys are ignored
// here (ValidateTopicConfig rejects them at creation).
func NewLogConfig(brokerProps, topicOverrides map[string]string) (LogConfig, error) {
	vals := make(map[string]string, len(topicKeys))
	srcs := make(map[string]ConfigSource, len(topicKeys))
	var errs []error
	for i := range topicKeys {
		tk := &topicKeys[i]
		raw, src, key, mult := tk.def, SourceDefault, tk.name, int64(1)
		if v, ok := topicOverrides[tk.name]; ok {
			raw, src = v, SourceTopic
		} else {
			for _, s := range tk.synonyms {
				if v, ok := brokerProps[s.name]; ok {
					raw, src, key, mult = v, SourceStaticBroker, s.name, s.mult
					break
				}
			}
		}
		norm, err := parseValue(tk, key, raw, mult)
		if err != nil {
			errs = append(errs, err)
			norm = tk.def
			src = SourceDefault
		}
		vals[tk.name] = norm
		srcs[tk.name] = src
	}
	if len(errs) > 0 {
		return LogConfig{}, errors.Join(errs...)
	}
	c := LogConfig{values: vals, sources: srcs}
	l := func(k string) int64 { n, _ := strconv.ParseInt(vals[k], 10, 64); return n }
	b := func(k string) bool { return vals[k] == "true" }
	c.SegmentBytes = l("segment.bytes")
	c.SegmentMs = l("segment.ms")
	c.SegmentJitterMs = l("segment.jitter.ms")
	c.SegmentIndexBytes = int32(l("segment.index.bytes"))
	c.IndexIntervalBytes = int32(l("index.interval.bytes"))
	c.FlushMessages = l("flush.messages")
	c.FlushMs = l("flush.ms")
	c.RetentionBytes = l("retention.bytes")
	c.RetentionMs = l("retention.ms")
	if c.RetentionMs < 0 {
		c.RetentionMs = -1
	}
	if p := vals["cleanup.policy"]; p != "" {
		c.CleanupPolicy = strings.Split(p, ",")
	} else {
		c.CleanupPolicy = []string{}
	}
	c.FileDeleteDelayMs = l("file.delete.delay.ms")
	c.Preallocate = b("preallocate")
	c.MaxMessageBytes = int32(l("max.message.bytes"))
	c.MinInSyncReplicas = int32(l("min.insync.replicas"))
	c.UncleanLeaderElectionEnable = b("unclean.leader.election.enable")
	c.CompressionType = vals["compression.type"]
	c.MessageTimestampType = vals["message.timestamp.type"]
	c.MessageTimestampDifferenceMaxMs = l("message.timestamp.difference.max.ms")
	c.MessageTimestampBeforeMaxMs = l("message.timestamp.before.max.ms")
	c.MessageTimestampAfterMaxMs = l("message.timestamp.after.max.ms")
	// LogConfig.getMessageTimestampBeforeMaxMs: the deprecated difference stands in while
	// before/after are left at their default.
	if c.MessageTimestampBeforeMaxMs == longMax && c.MessageTimestampDifferenceMaxMs != longMax {
		c.MessageTimestampBeforeMaxMs = c.MessageTimestampDifferenceMaxMs
	}
	if c.MessageTimestampAfterMaxMs == longMax && c.MessageTimestampDifferenceMaxMs != longMax {
		c.MessageTimestampAfterMaxMs = c.MessageTimestampDifferenceMaxMs
	}
	c.MessageFormatVersion = vals["message.format.version"]
	c.MessageDownconversionEnable = b("message.downconversion.enable")
	c.MinCleanableDirtyRatio, _ = strconv.ParseFloat(vals["min.cleanable.dirty.ratio"], 64)
	c.DeleteRetentionMs = l("delete.retention.ms")
	c.MinCompactionLagMs = l("min.compaction.lag.ms")
	c.MaxCompactionLagMs = l("max.compaction.lag.ms")
	c.LocalRetentionMs = l("local.retention.ms")
	c.LocalRetentionBytes = l("local.retention.bytes")
	c.RemoteStorageEnable = b("remote.storage.enable")
	c.LeaderReplicationThrottled = vals["leader.replication.throttled.replicas"]
	c.FollowerReplicationThrottled = vals["follower.replication.throttled.replicas"]
	return c, nil
}

// parseValue validates raw for tk (read under key, whose unit is mult ms) and returns the
// normalized string of the topic key.
func parseValue(tk *topicKey, key, raw string, mult int64) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s=%q: %s", ErrInvalidConfig, key, raw, why)
	}
	v := strings.TrimSpace(raw)
	switch tk.kind {
	case kLong, kInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", bad("not a number")
		}
		if tk.kind == kInt && mult == 1 && (n > intMax || n < math.MinInt32) {
			return "", bad("out of int range")
		}
		if mult != 1 {
			if n > longMax/mult || n < math.MinInt64/mult {
				n = longMax
			} else {
				n *= mult
			}
		}
		// KafkaConfig.logRetentionTimeMillis maps any negative broker value to -1 unchecked.
		brokerRetention := strings.HasPrefix(key, "log.retention.") && tk.name == "retention.ms"
		if brokerRetention && n < 0 {
			n = -1
		}
		if !brokerRetention && !math.IsNaN(tk.min) && float64(n) < tk.min {
			return "", bad(fmt.Sprintf("must be at least %v", tk.min))
		}
		return strconv.FormatInt(n, 10), nil
	case kDouble:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "", bad("not a number")
		}
		if f < tk.min || f > tk.max {
			return "", bad(fmt.Sprintf("must be in [%v, %v]", tk.min, tk.max))
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	case kBool:
		switch strings.ToLower(v) {
		case "true":
			return "true", nil
		case "false":
			return "false", nil
		}
		return "", bad("not a boolean")
	case kString:
		if len(tk.valid) == 0 {
			return v, nil
		}
		for _, ok := range tk.valid {
			if strings.EqualFold(v, ok) {
				return ok, nil
			}
		}
		return "", bad("must be one of " + strings.Join(tk.valid, ", "))
	case kList:
		var out []string
		for _, e := range strings.Split(v, ",") {
			e = strings.ToLower(strings.TrimSpace(e))
			if e == "" {
				continue
			}
			if !containsStr(tk.valid, e) {
				return "", bad("must be a list of " + strings.Join(tk.valid, ", "))
			}
			if !containsStr(out, e) {
				out = append(out, e)
			}
		}
		return strings.Join(out, ","), nil
	}
	return v, nil
}
