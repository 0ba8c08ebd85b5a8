package broker

// 32_describe_configs.go — DescribeConfigs v0-4 (kafka.server.ConfigHelper). Topic
// resources: every topic config with its effective value, source and synonyms resolved as
// Kafka does (topic override, then static broker key, then Kafka default; synonyms listed
// from the primary broker key on). Broker resources: this broker's properties (empty name:
// the dynamic cluster defaults, which samsa does not have yet, so none). BROKER_LOGGER: the
// root logger. DESCRIBE_CONFIGS on the topic or the cluster, else TOPIC_/CLUSTER_AUTHORIZATION_FAILED
// (authz.go). Deviations: no documentation strings (null), no dynamic broker configs.

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 4, (*APIs).handleDescribeConfigs) }

// Kafka's DescribeConfigsResponse.ConfigSource ids.
const (
	sourceUnknown                   int8 = 0
	sourceTopicConfig               int8 = 1
	sourceDynamicBrokerConfig       int8 = 2
	sourceDynamicDefaultBroker      int8 = 3
	sourceStaticBrokerConfig        int8 = 4
	sourceDefaultConfig             int8 = 5
	sourceDynamicBrokerLoggerConfig int8 = 6
)

// Kafka's ConfigResource.Type ids.
const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
)

// configSynonym is one DescribeConfigsSynonym.
type configSynonym struct {
	Name   string
	Value  *string
	Source int8
}

// configEntry is one DescribeConfigsResourceResult (also CreateTopics v5+ configs).
type configEntry struct {
	Name        string
	Value       *string
	Source      int8
	ReadOnly    bool
	IsSensitive bool
	Synonyms    []configSynonym
	Type        int8
}

// Kafka's DescribeConfigsResponse.ConfigType ids.
const (
	typeUnknown  int8 = 0
	typeBoolean  int8 = 1
	typeString   int8 = 2
	typeInt      int8 = 3
	typeShort    int8 = 4
	typeLong     int8 = 5
	typeDouble   int8 = 6
	typeList     int8 = 7
	typeClass    int8 = 8
	typePassword int8 = 9
)

// topicConfigTypes are LogConfig's ConfigDef types.
var topicConfigTypes = map[string]int8{
	"cleanup.policy": typeList, "compression.type": typeString, "delete.retention.ms": typeLong,
	"file.delete.delay.ms": typeLong, "flush.messages": typeLong, "flush.ms": typeLong,
	"follower.replication.throttled.replicas": typeList, "index.interval.bytes": typeInt,
	"leader.replication.throttled.replicas": typeList, "local.retention.bytes": typeLong,
	"local.retention.ms": typeLong, "max.compaction.lag.ms": typeLong, "max.message.bytes": typeInt,
	"message.downconversion.enable": typeBoolean, "message.format.version": typeString,
	"message.timestamp.after.max.ms": typeLong, "message.timestamp.before.max.ms": typeLong,
	"message.timestamp.difference.max.ms": typeLong, "message.timestamp.type": typeString,
	"min.cleanable.dirty.ratio": typeDouble, "min.compaction.lag.ms": typeLong, "min.insync.replicas": typeInt,
	"preallocate": typeBoolean, "remote.storage.enable": typeBoolean, "retention.bytes": typeLong,
	"retention.ms": typeLong, "segment.bytes": typeInt, "segment.index.bytes": typeInt,
	"segment.jitter.ms": typeLong, "segment.ms": typeLong, "unclean.leader.election.enable": typeBoolean,
}

// brokerKeyDefault returns Kafka's default of a broker key; keys with a null default
// (log.retention.ms, log.roll.ms, ...) have none, and Kafka lists no DEFAULT_CONFIG synonym
// for them.
func brokerKeyDefault(name string) (string, bool) {
	d, ok := config.Lookup(name)
	if !ok || !d.HasDefault {
		return "", false
	}
	return d.Default, true
}

// staticBrokerProps are the properties the operator set (file and overrides): Kafka's
// staticBrokerConfigs, the broker layer of a topic's config.
func staticBrokerProps(cfg *config.Config) map[string]string {
	if cfg == nil {
		return nil
	}
	return cfg.Static
}

func strp(s string) *string { return &s }

// topicConfigEntries is ConfigHelper.createTopicConfigEntry over every topic config, sorted
// by name, for the overrides of one topic. withSynonyms fills Synonyms (include_synonyms).
func (ad *adminState) topicConfigEntries(overrides map[string]string, withSynonyms bool) []configEntry {
	static := ad.staticProps()
	lc, err := logstore.NewLogConfig(static, overrides)
	if err != nil {
		// A bad stored override: Kafka would fail the same way when building the LogConfig;
		// fall back to the broker layer so the other values still show.
		lc, _ = logstore.NewLogConfig(static, nil)
	}
	names := logstore.TopicConfigNames()
	for k := range overrides {
		if _, known := topicConfigTypes[k]; !known {
			names = append(names, k) // LogConfig.originals keeps unknown keys
		}
	}
	sort.Strings(names)
	out := make([]configEntry, 0, len(names))
	for _, name := range names {
		var value *string
		if v, ok := lc.Get(name); ok {
			value = strp(v)
		} else if v, ok := overrides[name]; ok {
			value = strp(v)
		}
		var syns []configSynonym
		if _, ok := overrides[name]; ok {
			syns = append(syns, configSynonym{Name: name, Value: value, Source: sourceTopicConfig})
		}
		if brokerSyns := logstore.BrokerSynonyms(name); len(brokerSyns) > 0 {
			syns = append(syns, brokerConfigSynonyms(brokerSyns[0], brokerSyns, static, brokerKeyDefault)...)
		}
		e := configEntry{Name: name, Value: value, Source: sourceDefaultConfig, Type: topicConfigTypes[name]}
		if len(syns) > 0 {
			e.Source = syns[0].Source
		}
		if withSynonyms {
			e.Synonyms = syns
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigSynonyms is ConfigHelper.configSynonyms without dynamic layers: static values
// of each synonym, then their defaults, then drop everything before the first entry named
// name (e.g. listener overrides when describing the base config).
func brokerConfigSynonyms(name string, synonyms []string, static map[string]string, defaults func(string) (string, bool)) []configSynonym {
	var all []configSynonym
	for _, s := range synonyms {
		if v, ok := static[s]; ok {
			all = append(all, configSynonym{Name: s, Value: strp(v), Source: sourceStaticBrokerConfig})
		}
	}
	for _, s := range synonyms {
		if v, ok := defaults(s); ok {
			all = append(all, configSynonym{Name: s, Value: strp(v), Source: sourceDefaultConfig})
		}
	}
	for i, s := range all {
		if s.Name == name {
			return all[i:]
		}
	}
	return nil
}

// brokerSynonymGroups are DynamicBrokerConfig.brokerConfigSynonyms for keys with unit
// variants; every other key is its own only synonym.
var brokerSynonymGroups = [][]string{
	{"log.roll.ms", "log.roll.hours"},
	{"log.roll.jitter.ms", "log.roll.jitter.hours"},
	{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
}

func brokerSynonymsOf(name string) []string {
	for _, g := range brokerSynonymGroups {
		for i, n := range g {
			if n == name {
				return g[i:]
			}
		}
	}
	return []string{name}
}

// configTypeOf maps a broker property's ConfigDef type to DescribeConfigs' config_type.
func configTypeOf(name string) int8 {
	d, ok := config.Lookup(name)
	if !ok {
		return typeUnknown
	}
	switch d.Type {
	case config.TypeBoolean:
		return typeBoolean
	case config.TypeString:
		return typeString
	case config.TypeInt:
		return typeInt
	case config.TypeShort:
		return typeShort
	case config.TypeLong:
		return typeLong
	case config.TypeDouble:
		return typeDouble
	case config.TypeList:
		return typeList
	case config.TypeClass:
		return typeClass
	case config.TypePassword:
		return typePassword
	}
	return typeUnknown
}

func isSensitiveBrokerKey(name string) bool {
	d, ok := config.Lookup(name)
	return ok && d.Sensitive()
}

// dynamicBrokerKeys are the keys DynamicBrokerConfig allows to change at runtime; Kafka
// reports every other broker key as read-only.
var dynamicBrokerKeyPrefixes = []string{"log.", "listener.name.", "ssl.", "sasl.", "listener.security.protocol.map", "listeners", "advertised.listeners"}

var dynamicBrokerKeys = map[string]bool{
	"num.io.threads": true, "num.network.threads": true, "num.replica.fetchers": true, "num.recovery.threads.per.data.dir": true,
	"background.threads": true, "max.connections": true, "max.connections.per.ip": true, "max.connections.per.ip.overrides": true,
	"max.connection.creation.rate": true, "message.max.bytes": true, "compression.type": true, "min.insync.replicas": true,
	"unclean.leader.election.enable": true, "producer.id.expiration.ms": true, "follower.replication.throttled.rate": true,
	"leader.replication.throttled.rate": true, "replica.alter.log.dirs.io.max.bytes.per.second": true,
	"metric.reporters": true, "principal.builder.class": true, "remote.log.manager.task.interval.ms": true,
}

func isDynamicBrokerKey(name string) bool {
	if dynamicBrokerKeys[name] {
		return true
	}
	switch name {
	case "log.dirs", "log.dir", "log.retention.check.interval.ms", "log.flush.offset.checkpoint.interval.ms",
		"log.flush.start.offset.checkpoint.interval.ms", "log.message.format.version", "log.cleaner.enable",
		"log.dir.failure.timeout.ms":
		return false
	}
	for _, p := range dynamicBrokerKeyPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// brokerConfigEntries is ConfigHelper.createBrokerConfigEntry over this broker's properties.
func (a *APIs) brokerConfigEntries(withSynonyms bool) []configEntry {
	var props, static map[string]string
	if a.Config != nil {
		props, static = a.Config.Props, staticBrokerProps(a.Config)
	}
	// AbstractConfig.originals (set keys, known or not) ++ nonInternalValues (every known key).
	seen := map[string]bool{}
	var names []string
	for _, k := range config.Names() {
		seen[k] = true
		names = append(names, k)
	}
	for k := range static {
		if !seen[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make([]configEntry, 0, len(names))
	for _, name := range names {
		sensitive := isSensitiveBrokerKey(name)
		// Kafka reports null for an unset key with a null default (log.retention.ms), even
		// though another unit synonym gives the effective value.
		var value *string
		if v, ok := static[name]; ok {
			value = strp(v)
		} else if d, known := config.Lookup(name); !known || d.HasDefault {
			if v, ok := props[name]; ok {
				value = strp(v)
			}
		}
		syns := brokerConfigSynonyms(name, brokerSynonymsOf(name), static, brokerKeyDefault)
		if sensitive {
			value = nil
			for i := range syns {
				syns[i].Value = nil
			}
		}
		e := configEntry{Name: name, Value: value, Source: sourceDefaultConfig, ReadOnly: !isDynamicBrokerKey(name),
			IsSensitive: sensitive, Type: configTypeOf(name)}
		if len(syns) > 0 {
			e.Source = syns[0].Source
		}
		if withSynonyms {
			e.Synonyms = syns
		}
		out = append(out, e)
	}
	return out
}

func (a *APIs) handleDescribeConfigs(ctx context.Context, rc *RequestContext, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	ad := a.admin()
	for _, res := range req.Resources {
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType, r.ResourceName = res.ResourceType, res.ResourceName
		// ConfigHelper.handleDescribeConfigsRequest: DESCRIBE_CONFIGS on the topic or the
		// cluster; the answer then carries the error's default message and no configs.
		if denied := a.configResourceAuthorized(rc, kmsg.ACLOperationDescribeConfigs, int8(res.ResourceType), res.ResourceName); denied != nil {
			r.ErrorCode = denied.code.Code
			msg := "Topic authorization failed."
			if denied.code == kerr.ClusterAuthorizationFailed {
				msg = "Cluster authorization failed."
			}
			r.ErrorMessage = &msg
			r.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
			resp.Resources = append(resp.Resources, r)
			continue
		}
		entries, err := a.describeResource(ad, res, req.IncludeSynonyms)
		if err != nil {
			r.ErrorCode, r.ErrorMessage = apiErrorParts(err)
			log := a.Log
			if ad != nil {
				log = ad.log
			}
			if log != nil {
				log.WithError(err).WithFields(logrus.Fields{"resource_type": res.ResourceType, "resource_name": res.ResourceName}).
					Debug("error processing describe configs request")
			}
			r.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
			resp.Resources = append(resp.Resources, r)
			continue
		}
		r.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		for _, e := range entries {
			if res.ConfigNames != nil && !containsString(res.ConfigNames, e.Name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.IsSensitive
			c.Source = kmsg.ConfigSource(e.Source)
			c.IsDefault = e.Source == sourceDefaultConfig // v0's is_default
			c.ConfigType = kmsg.ConfigType(e.Type)
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
			for _, s := range e.Synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
			r.Configs = append(r.Configs, c)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// describeResource returns the entries of one resource or its error.
func (a *APIs) describeResource(ad *adminState, res kmsg.DescribeConfigsRequestResource, withSynonyms bool) ([]configEntry, error) {
	switch res.ResourceType {
	case resourceTopic:
		if err := validateTopicName(res.ResourceName); err != nil {
			return nil, err
		}
		if ad == nil || a.Metadata == nil || !a.Metadata.Contains(res.ResourceName) {
			return nil, &apiError{code: kerr.UnknownTopicOrPartition}
		}
		overrides, err := ad.zk.GetTopicConfig(res.ResourceName)
		if err != nil {
			return nil, err
		}
		return ad.topicConfigEntries(overrides, withSynonyms), nil
	case resourceBroker:
		if res.ResourceName == "" {
			return nil, nil // no dynamic cluster-wide defaults yet
		}
		id, err := resourceNameToBrokerID(res.ResourceName)
		if err != nil {
			return nil, err
		}
		if id != a.BrokerID {
			return nil, newAPIError(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", a.BrokerID, res.ResourceName)
		}
		return a.brokerConfigEntries(withSynonyms), nil
	case resourceBrokerLogger:
		if res.ResourceName == "" {
			return nil, newAPIError(kerr.InvalidRequest, "Broker id must not be empty")
		}
		id, err := resourceNameToBrokerID(res.ResourceName)
		if err != nil {
			return nil, err
		}
		if id != a.BrokerID {
			return nil, newAPIError(kerr.InvalidRequest, "Unexpected broker id, expected %d but received %s", a.BrokerID, res.ResourceName)
		}
		level := "INFO"
		if a.Log != nil {
			level = strings.ToUpper(a.Log.Logger.GetLevel().String())
			if level == "WARNING" {
				level = "WARN"
			}
		}
		return []configEntry{{Name: "root", Value: strp(level), Source: sourceDynamicBrokerLoggerConfig}}, nil
	}
	return nil, newAPIError(kerr.InvalidRequest, "Unsupported resource type: %s", res.ResourceType)
}

func resourceNameToBrokerID(name string) (int32, error) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, newAPIError(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
	}
	return int32(id), nil
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
