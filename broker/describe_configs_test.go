package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

// synonymStrings renders synonyms as SOURCE:name=value for comparisons.
func synonymStrings(syns []configSynonym) []string {
	out := make([]string, 0, len(syns))
	for _, s := range syns {
		v := "null"
		if s.Value != nil {
			v = *s.Value
		}
		out = append(out, adminSourceNames[s.Source]+":"+s.Name+"="+v)
	}
	return out
}

func entryByName(t *testing.T, entries []configEntry, name string) configEntry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return configEntry{}
}

func wantSynonyms(t *testing.T, e configEntry, want ...string) {
	t.Helper()
	got := synonymStrings(e.Synonyms)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s synonyms\n got %v\nwant %v", e.Name, got, want)
	}
}

func wantValue(t *testing.T, e configEntry, want string) {
	t.Helper()
	got := "null"
	if e.Value != nil {
		got = *e.Value
	}
	if got != want {
		t.Fatalf("%s = %s, want %s", e.Name, got, want)
	}
}

func TestBrokerSynonymsOf(t *testing.T) {
	for name, want := range map[string]string{
		"log.roll.hours":                                "log.roll.ms log.roll.hours",
		"log.roll.jitter.ms":                            "log.roll.jitter.ms log.roll.jitter.hours",
		"log.retention.minutes":                         "log.retention.ms log.retention.minutes log.retention.hours",
		"log.flush.interval.ms":                         "log.flush.interval.ms log.flush.scheduler.interval.ms",
		"log.flush.scheduler.interval.ms":               "log.flush.scheduler.interval.ms",
		"listener.name.external.ssl.keystore.location":  "listener.name.external.ssl.keystore.location ssl.keystore.location",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": "listener.name.sasl_ssl.plain.sasl.jaas.config sasl.jaas.config",
		"listener.name.external.max.connections":        "listener.name.external.max.connections max.connections",
		"listener.name.nodot":                           "listener.name.nodot",
		"num.io.threads":                                "num.io.threads",
	} {
		if got := strings.Join(brokerSynonymsOf(name), " "); got != want {
			t.Errorf("brokerSynonymsOf(%s) = %s, want %s", name, got, want)
		}
	}
}

// testLayers has a key at every layer, unit variants spread over layers, a listener
// override, a listener password, a dynamic-only key and an unknown static key.
func testLayers() brokerConfigLayers {
	return brokerConfigLayers{
		dynBroker: map[string]string{"log.retention.hours": "1", "listener.name.external.ssl.keystore.type": "PKCS12",
			"listener.name.external.ssl.keystore.password": "secret", "leader.replication.throttled.rate": "100",
			"log.segment.bytes": "2000000"},
		dynDefault: map[string]string{"log.retention.ms": "5000", "log.retention.hours": "2", "num.io.threads": "4"},
		static:     map[string]string{"log.retention.minutes": "30", "ssl.keystore.type": "JKS", "custom.key": "x", "log.segment.bytes": "1048576"},
	}
}

func TestBrokerConfigEntriesPerBroker(t *testing.T) {
	layers := testLayers()
	props := map[string]string{"log.retention.ms": "5000", "log.retention.hours": "1", "log.segment.bytes": "2000000",
		"num.io.threads": "4", "ssl.keystore.type": "JKS", "log.retention.minutes": "30"}
	entries := brokerConfigEntriesOf(layers, props, true, true, true)

	// Per-broker layer first, then cluster default, static, default; everything before the
	// first entry named like the key is dropped.
	e := entryByName(t, entries, "log.retention.ms")
	wantValue(t, e, "5000")
	if e.Source != sourceDynamicDefaultBroker || e.ReadOnly || e.Type != typeLong || e.IsSensitive {
		t.Fatalf("log.retention.ms %+v", e)
	}
	wantSynonyms(t, e, "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000", "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=2",
		"STATIC_BROKER_CONFIG:log.retention.minutes=30", "DEFAULT_CONFIG:log.retention.hours=168")
	e = entryByName(t, entries, "log.retention.hours")
	wantValue(t, e, "1")
	if e.Source != sourceDynamicBrokerConfig || !e.ReadOnly { // only log.retention.ms is dynamic in Kafka
		t.Fatalf("log.retention.hours %+v", e)
	}
	wantSynonyms(t, e, "DYNAMIC_BROKER_CONFIG:log.retention.hours=1", "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000",
		"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=2", "STATIC_BROKER_CONFIG:log.retention.minutes=30",
		"DEFAULT_CONFIG:log.retention.hours=168")

	// A listener override: its base key's type, listed before the base key's layers; the base
	// key does not list the override.
	e = entryByName(t, entries, "listener.name.external.ssl.keystore.type")
	wantValue(t, e, "PKCS12")
	if e.Type != typeString || e.IsSensitive || !e.ReadOnly || e.Doc != nil {
		t.Fatalf("listener override %+v", e)
	}
	wantSynonyms(t, e, "DYNAMIC_BROKER_CONFIG:listener.name.external.ssl.keystore.type=PKCS12",
		"STATIC_BROKER_CONFIG:ssl.keystore.type=JKS", "DEFAULT_CONFIG:ssl.keystore.type=JKS")
	e = entryByName(t, entries, "ssl.keystore.type")
	wantSynonyms(t, e, "STATIC_BROKER_CONFIG:ssl.keystore.type=JKS", "DEFAULT_CONFIG:ssl.keystore.type=JKS")
	if e.ReadOnly || e.Doc == nil {
		t.Fatalf("ssl.keystore.type %+v", e)
	}

	// Passwords and keys of unknown type are sensitive: null values everywhere.
	e = entryByName(t, entries, "listener.name.external.ssl.keystore.password")
	if e.Value != nil || !e.IsSensitive || e.Type != typePassword || e.Source != sourceDynamicBrokerConfig {
		t.Fatalf("listener password %+v", e)
	}
	wantSynonyms(t, e, "DYNAMIC_BROKER_CONFIG:listener.name.external.ssl.keystore.password=null")
	e = entryByName(t, entries, "custom.key")
	if e.Value != nil || !e.IsSensitive || e.Type != typeUnknown || e.Source != sourceStaticBrokerConfig || !e.ReadOnly {
		t.Fatalf("unknown key %+v", e)
	}

	// DynamicConfig.Broker's own keys: typed, no default, no documentation, read-only as
	// Kafka reports them.
	e = entryByName(t, entries, "leader.replication.throttled.rate")
	wantValue(t, e, "100")
	if e.Type != typeLong || e.Source != sourceDynamicBrokerConfig || e.Doc != nil {
		t.Fatalf("throttled rate %+v", e)
	}
	wantSynonyms(t, e, "DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=100")

	// Unset keys: the default, or null for a null default.
	e = entryByName(t, entries, "log.roll.ms")
	wantValue(t, e, "null")
	wantSynonyms(t, e) // log.roll.hours' default comes before any log.roll.ms entry: dropped
	if e.Source != sourceDefaultConfig {
		t.Fatalf("log.roll.ms %+v", e)
	}
	e = entryByName(t, entries, "num.network.threads")
	wantValue(t, e, "3")
	if e.Source != sourceDefaultConfig || e.ReadOnly || e.Doc == nil || *e.Doc == "" {
		t.Fatalf("num.network.threads %+v", e)
	}
	if e := entryByName(t, entries, "broker.id"); !e.ReadOnly {
		t.Fatalf("broker.id %+v", e)
	}

	// Without include_synonyms / include_documentation: sources stay, the lists go.
	for _, e := range brokerConfigEntriesOf(layers, props, true, false, false) {
		if e.Synonyms != nil || e.Doc != nil {
			t.Fatalf("%s has synonyms or docs without asking: %+v", e.Name, e)
		}
		if e.Name == "log.retention.ms" && e.Source != sourceDynamicDefaultBroker {
			t.Fatalf("source without synonyms %+v", e)
		}
	}
}

func TestBrokerConfigEntriesClusterDefault(t *testing.T) {
	entries := brokerConfigEntriesOf(testLayers(), nil, false, true, false)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if strings.Join(names, " ") != "log.retention.hours log.retention.ms num.io.threads" {
		t.Fatalf("cluster default entries %v", names)
	}
	// Only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms, values as stored.
	e := entryByName(t, entries, "log.retention.hours")
	wantValue(t, e, "2")
	if e.Source != sourceDynamicDefaultBroker {
		t.Fatalf("%+v", e)
	}
	wantSynonyms(t, e, "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000", "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=2")
	wantSynonyms(t, entryByName(t, entries, "num.io.threads"), "DYNAMIC_DEFAULT_BROKER_CONFIG:num.io.threads=4")
}

func TestTopicConfigEntriesThroughLayers(t *testing.T) {
	overrides := map[string]string{"cleanup.policy": "compact", "custom": "v"}
	entries := topicConfigEntriesOf(testLayers(), overrides, true, true)
	if len(entries) != len(logstore.TopicConfigNames())+1 {
		t.Fatalf("%d entries", len(entries))
	}
	e := entryByName(t, entries, "retention.ms")
	// log.retention.ms (cluster default) wins over log.retention.hours (per broker): the
	// more precise unit wins whatever its layer, as KafkaConfig resolves it.
	wantValue(t, e, "5000")
	if e.Source != sourceDynamicDefaultBroker || e.ReadOnly || e.Type != typeLong {
		t.Fatalf("retention.ms %+v", e)
	}
	wantSynonyms(t, e, "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000", "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=2",
		"STATIC_BROKER_CONFIG:log.retention.minutes=30", "DEFAULT_CONFIG:log.retention.hours=168")
	e = entryByName(t, entries, "segment.bytes")
	wantValue(t, e, "2000000")
	wantSynonyms(t, e, "DYNAMIC_BROKER_CONFIG:log.segment.bytes=2000000", "STATIC_BROKER_CONFIG:log.segment.bytes=1048576",
		"DEFAULT_CONFIG:log.segment.bytes=1073741824")
	e = entryByName(t, entries, "cleanup.policy")
	wantSynonyms(t, e, "TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete")
	if e.Doc == nil || *e.Doc == "" {
		t.Fatalf("cleanup.policy without documentation")
	}
	e = entryByName(t, entries, "custom")
	if e.Value != nil || !e.IsSensitive || e.Type != typeUnknown || e.Source != sourceTopicConfig || e.Doc != nil {
		t.Fatalf("unknown topic key %+v", e)
	}
	wantSynonyms(t, e, "TOPIC_CONFIG:custom=null")
	// Topic keys without a broker synonym: the default and no synonyms.
	e = entryByName(t, entries, "remote.storage.enable")
	if e.Source != sourceDefaultConfig || len(e.Synonyms) != 0 {
		t.Fatalf("remote.storage.enable %+v", e)
	}
}

func TestEveryDescribedKeyHasDocumentation(t *testing.T) {
	for _, n := range config.Names() {
		if d, ok := config.BrokerDoc(n); !ok || len(d) < 10 {
			t.Errorf("broker key %s has no documentation", n)
		}
	}
	for _, n := range logstore.TopicConfigNames() {
		if d, ok := config.TopicDoc(n); !ok || len(d) < 10 {
			t.Errorf("topic key %s has no documentation", n)
		}
	}
	if _, ok := config.BrokerDoc("listener.name.external.ssl.keystore.location"); ok {
		t.Errorf("listener overrides have no documentation in Kafka")
	}
}

func TestAllDynamicBrokerConfigsAreKnownKeys(t *testing.T) {
	for k := range allDynamicBrokerConfigs {
		if _, ok := config.Lookup(k); !ok && !strings.HasPrefix(k, "remote.log.") {
			t.Errorf("dynamic key %s is not a broker key", k)
		}
	}
}

// DescribeConfigs reads the dynamic layers through DynamicBrokerConfig.Layers; without it
// only static configs would ever show.
func TestDynamicBrokerConfigExposesLayers(t *testing.T) {
	if _, ok := any(&DynamicBrokerConfig{}).(dynamicLayerSource); !ok {
		t.Fatal("DynamicBrokerConfig has no Layers() (static, dynDefault, dynBroker map[string]string)")
	}
}

func TestDescribeConfigsDocumentationAndLoggers(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"log.segment.bytes": "1048576"})
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("docs", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", resp.Topics[0].ErrorCode, nil)

	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "docs"}, {kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeBroker, ""},
		{kmsg.ConfigResourceTypeBrokerLogger, "1"}, {kmsg.ConfigResourceTypeBrokerLogger, "x"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		if r.typ == kmsg.ConfigResourceTypeBroker && r.name == "1" {
			rr.ConfigNames = []string{"log.segment.bytes", "num.io.threads"}
		}
		req.Resources = append(req.Resources, rr)
	}
	dresp := tc.request(req, 4).(*kmsg.DescribeConfigsResponse)
	for i, r := range dresp.Resources[:4] {
		adminWantCode(t, "resource "+r.ResourceName, r.ErrorCode, nil)
		if i == 2 {
			if len(r.Configs) != 0 {
				t.Fatalf("cluster defaults without dynamic configs: %+v", r.Configs)
			}
			continue
		}
		for _, c := range r.Configs {
			if i < 2 && (c.Documentation == nil || *c.Documentation == "") {
				t.Fatalf("%s has no documentation", c.Name)
			}
			if i == 3 && c.Documentation != nil {
				t.Fatalf("logger %s has documentation", c.Name)
			}
		}
	}
	if n := len(dresp.Resources[1].Configs); n != 2 {
		t.Fatalf("broker configs: %d, want the 2 asked for", n)
	}
	loggers := map[string]string{}
	for _, c := range dresp.Resources[3].Configs {
		if c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || c.ReadOnly || c.IsSensitive || len(c.ConfigSynonyms) != 0 || c.Value == nil {
			t.Fatalf("logger entry %+v", c)
		}
		loggers[c.Name] = *c.Value
	}
	if loggers["root"] != "INFO" || loggers["kafka.controller.KafkaController"] != "INFO" || loggers["state.change.logger"] != "INFO" {
		t.Fatalf("loggers %v", loggers)
	}
	adminWantCode(t, "BROKER_LOGGER x", dresp.Resources[4].ErrorCode, kerr.InvalidRequest)
	if m := dresp.Resources[4].ErrorMessage; m == nil || *m != "Broker id must be an integer, but it is: x" {
		t.Fatalf("BROKER_LOGGER x message %v", m)
	}

	// Without include_documentation, v3+ answers null documentation.
	req.IncludeDocumentation = false
	for _, c := range tc.request(req, 4).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		if c.Documentation != nil {
			t.Fatalf("%s documented without asking", c.Name)
		}
	}
}

// Dynamic values written through IncrementalAlterConfigs show in DescribeConfigs with their
// layer: per broker over the cluster default over Kafka's default, for the broker, the
// cluster-default resource and a topic without overrides.
func TestDescribeConfigsDynamicSources(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("dyn", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", resp.Topics[0].ErrorCode, nil)

	alter := func(name string, kv ...string) {
		t.Helper()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
		for i := 0; i < len(kv); i += 2 {
			r.Configs = append(r.Configs, loggerOp(kv[i], opSet, strp(kv[i+1])))
		}
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = append(req.Resources, r)
		if res := tc.request(req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; res.ErrorCode != 0 {
			t.Fatalf("alter broker %q: %d %v", name, res.ErrorCode, res.ErrorMessage)
		}
	}
	alter("", "message.max.bytes", "1500000", "log.retention.ms", "3600000")
	alter("1", "message.max.bytes", "2000000")

	describe := func(typ kmsg.ConfigResourceType, name string, keys ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		req.Resources = append(req.Resources, r)
		res := tc.request(req, 4).(*kmsg.DescribeConfigsResponse).Resources[0]
		adminWantCode(t, "describe "+name, res.ErrorCode, nil)
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range res.Configs {
			out[c.Name] = c
		}
		return out
	}
	render := func(c kmsg.DescribeConfigsResponseResourceConfig) string {
		v := "null"
		if c.Value != nil {
			v = *c.Value
		}
		s := adminSourceNames[int8(c.Source)] + ":" + v + " ["
		for _, syn := range c.ConfigSynonyms {
			sv := "null"
			if syn.Value != nil {
				sv = *syn.Value
			}
			s += adminSourceNames[int8(syn.Source)] + ":" + syn.Name + "=" + sv + " "
		}
		return s + "]"
	}
	// The broker applies the change when the notification reaches it.
	want := "DYNAMIC_BROKER_CONFIG:2000000 [DYNAMIC_BROKER_CONFIG:message.max.bytes=2000000 " +
		"DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=1500000 DEFAULT_CONFIG:message.max.bytes=1048588 ]"
	var got string
	adminWaitFor(t, 10*time.Second, "dynamic message.max.bytes", func() bool {
		got = render(describe(kmsg.ConfigResourceTypeBroker, "1", "message.max.bytes")["message.max.bytes"])
		return got == want
	})

	defaults := describe(kmsg.ConfigResourceTypeBroker, "")
	if len(defaults) != 2 {
		t.Fatalf("cluster defaults %v", defaults)
	}
	if got := render(defaults["message.max.bytes"]); got != "DYNAMIC_DEFAULT_BROKER_CONFIG:1500000 [DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=1500000 ]" {
		t.Fatalf("default message.max.bytes %s", got)
	}
	if got := render(defaults["log.retention.ms"]); got != "DYNAMIC_DEFAULT_BROKER_CONFIG:3600000 [DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000 ]" {
		t.Fatalf("default log.retention.ms %s", got)
	}

	topic := describe(kmsg.ConfigResourceTypeTopic, "dyn", "max.message.bytes", "retention.ms")
	if got := render(topic["max.message.bytes"]); got != want {
		t.Fatalf("topic max.message.bytes %s", got)
	}
	if got := render(topic["retention.ms"]); got != "DYNAMIC_DEFAULT_BROKER_CONFIG:3600000 [DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000 DEFAULT_CONFIG:log.retention.hours=168 ]" {
		t.Fatalf("topic retention.ms %s", got)
	}
}
