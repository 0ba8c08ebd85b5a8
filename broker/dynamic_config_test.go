package broker

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// memBrokerConfigStore is /config/brokers in memory.
type memBrokerConfigStore struct {
	mu     sync.Mutex
	m      map[string]map[string]string
	writes int
}

func (s *memBrokerConfigStore) GetBrokerConfig(entity string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyProps(s.m[entity]), nil
}

func (s *memBrokerConfigStore) SetBrokerConfig(entity string, cfg map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string]string{}
	}
	s.m[entity] = copyProps(cfg)
	s.writes++
	return nil
}

// recordingReconfigurable refuses log.retention.ms=666 and records what it applied.
type recordingReconfigurable struct {
	keys    []string
	applied []string // old->new of log.retention.ms
}

func (r *recordingReconfigurable) ReconfigurableConfigs() []string { return r.keys }
func (r *recordingReconfigurable) ValidateReconfiguration(c *config.Config) error {
	if c.Props["log.retention.ms"] == "666" {
		return errors.New("666 refused")
	}
	return nil
}
func (r *recordingReconfigurable) Reconfigure(o, n *config.Config) {
	r.applied = append(r.applied, o.Props["log.retention.ms"]+"->"+n.Props["log.retention.ms"])
}

func staticTestConfig(t *testing.T, extra map[string]string) *config.Config {
	t.Helper()
	raw := map[string]string{"broker.id": "1", "zookeeper.connect": "127.0.0.1:1", "log.dirs": "/tmp/x",
		"listeners": "PLAINTEXT://127.0.0.1:0", "log.retention.hours": "5"}
	for k, v := range extra {
		raw[k] = v
	}
	cfg, _, err := config.FromMap(raw)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestDynamicBrokerConfigPrecedenceAndApply(t *testing.T) {
	store := &memBrokerConfigStore{m: map[string]map[string]string{
		// log.dirs is not dynamic and log.cleaner.threads does not parse: both dropped, the rest applies.
		"<default>": {"log.retention.ms": "1000", "log.dirs": "/elsewhere", "log.cleaner.threads": "many", "log.segment.bytes": "100000"},
		"1":         {"log.retention.ms": "2000"},
		"2":         {"log.retention.ms": "9999"},
	}}
	d := NewDynamicBrokerConfig(staticTestConfig(t, nil))
	if err := d.Initialize(store, 1, adminLogger(t)); err != nil {
		t.Fatal(err)
	}
	cur := d.Current()
	if cur.Props["log.retention.ms"] != "2000" || cur.Props["log.segment.bytes"] != "100000" || cur.LogDirs[0] != "/tmp/x" {
		t.Fatalf("effective config: retention %s segment %s dirs %v", cur.Props["log.retention.ms"], cur.Props["log.segment.bytes"], cur.LogDirs)
	}
	static, def, per := d.Layers()
	if static["log.retention.hours"] != "5" || def["log.dirs"] != "" || def["log.cleaner.threads"] != "" || per["log.retention.ms"] != "2000" {
		t.Fatalf("layers: static %v default %v broker %v", static, def, per)
	}

	r := &recordingReconfigurable{keys: []string{"log.retention.ms"}}
	d.AddReconfigurable(r)

	// A default change hidden by the per-broker value changes nothing effective.
	store.m["<default>"] = map[string]string{"log.retention.ms": "3000"}
	if err := d.HandleConfigChange(store, "<default>"); err != nil {
		t.Fatal(err)
	}
	if d.Current().Props["log.retention.ms"] != "2000" || len(r.applied) != 0 {
		t.Fatalf("hidden default applied: %s %v", d.Current().Props["log.retention.ms"], r.applied)
	}
	// A refused value changes nothing: config, layers, reconfigurables.
	before := d.Current()
	store.m["1"] = map[string]string{"log.retention.ms": "666"}
	if err := d.HandleConfigChange(store, "1"); err != nil {
		t.Fatal(err)
	}
	if _, _, per := d.Layers(); d.Current() != before || per["log.retention.ms"] != "2000" || len(r.applied) != 0 {
		t.Fatalf("refused update leaked: %s %v %v", d.Current().Props["log.retention.ms"], per, r.applied)
	}
	// Another broker's entity is not ours.
	if err := d.HandleConfigChange(store, "2"); err != nil || d.Current() != before {
		t.Fatalf("other broker's config applied: %v", err)
	}
	// Removing the per-broker value uncovers the default.
	store.m["1"] = map[string]string{}
	if err := d.HandleConfigChange(store, "1"); err != nil {
		t.Fatal(err)
	}
	if got := d.Current().Props["log.retention.ms"]; got != "3000" || len(r.applied) != 1 || r.applied[0] != "2000->3000" {
		t.Fatalf("after delete: %s %v", got, r.applied)
	}
	// And removing the default falls back to the static log.retention.hours.
	store.m["<default>"] = map[string]string{}
	_ = d.HandleConfigChange(store, "<default>")
	if got := d.Current().Props["log.retention.ms"]; got != "18000000" {
		t.Fatalf("static fallback: %s", got)
	}
	if d.Current().BrokerID != 1 {
		t.Fatalf("broker id %d", d.Current().BrokerID)
	}
}

func TestDynamicBrokerConfigValidate(t *testing.T) {
	d := NewDynamicBrokerConfig(staticTestConfig(t, nil))
	if err := d.Initialize(&memBrokerConfigStore{}, 1, adminLogger(t)); err != nil {
		t.Fatal(err)
	}
	d.AddReconfigurable(&recordingReconfigurable{keys: []string{"log.retention.ms"}})
	for _, tc := range []struct {
		props     map[string]string
		perBroker bool
		want      string
	}{
		{map[string]string{"log.retention.ms": "10"}, false, ""},
		{map[string]string{"log.dirs": "/y"}, true, "Cannot update these configs dynamically: Set(log.dirs)"},
		{map[string]string{"log.retention.ms": "666"}, true, "Invalid dynamic configuration"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}, false,
			"Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"},
		// Rules across keys of the static file apply to the merged configuration.
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:1"}, true, "PLAINTEXT"},
		// Dynamic in Kafka, but nothing in samsa applies them live: refused, not stored.
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}, true,
			"samsa cannot apply these configs without a restart yet; set them in the broker's config file: Set(listeners)"},
		{map[string]string{"listener.name.plaintext.plain.sasl.jaas.config": "x"}, true, "Set(listener.name.plaintext.plain.sasl.jaas.config)"},
		{map[string]string{"listener.name.other.plain.sasl.jaas.config": "x"}, true, ""},
		{map[string]string{"metric.reporters": "a.B"}, false, "Set(metric.reporters)"},
		{map[string]string{"transaction.partition.verification.enable": "false"}, false, ""},
		{map[string]string{"my.custom.key": "1"}, false, ""},
	} {
		err := d.Validate(tc.props, tc.perBroker)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%v, %v) = %v, want %q", tc.props, tc.perBroker, err, tc.want)
		}
	}
	if d.Current().Props["log.retention.ms"] != "18000000" {
		t.Fatal("Validate changed the configuration")
	}
}

func TestDynamicBrokerConfigPasswords(t *testing.T) {
	const key = "listener.name.ssl.ssl.key.password"
	oldEnc := config.NewPasswordEncoder("old-secret", "", "AES/CBC/PKCS5Padding", 128, 1024)
	stored, err := oldEnc.Encode("hunter2")
	if err != nil {
		t.Fatal(err)
	}
	store := &memBrokerConfigStore{m: map[string]map[string]string{"1": {key: stored}}}
	d := NewDynamicBrokerConfig(staticTestConfig(t, map[string]string{
		"password.encoder.secret": "new-secret", "password.encoder.old.secret": "old-secret", "password.encoder.iterations": "1024"}))
	if err := d.Initialize(store, 1, adminLogger(t)); err != nil {
		t.Fatal(err)
	}
	if _, _, per := d.Layers(); per[key] != "hunter2" {
		t.Fatalf("decoded password %q", per[key])
	}
	// Re-encoded with the new secret and written back.
	if store.writes != 1 || store.m["1"][key] == stored {
		t.Fatalf("not re-encoded: writes %d", store.writes)
	}
	if got, err := config.NewPasswordEncoder("new-secret", "", "", 0, 0).Decode(store.m["1"][key]); err != nil || got != "hunter2" {
		t.Fatalf("re-encoded value decodes to %q, %v", got, err)
	}

	p, err := d.ToPersistentProps(map[string]string{key: "s3", "log.retention.ms": "5"}, true)
	if err != nil || p[key] == "s3" || !strings.Contains(p[key], "encryptedPassword:") || p["log.retention.ms"] != "5" {
		t.Fatalf("ToPersistentProps = %v, %v", p, err)
	}
	if back := d.FromPersistentProps(p, true); back[key] != "s3" {
		t.Fatalf("FromPersistentProps = %v", back)
	}
	if _, err := d.ToPersistentProps(map[string]string{key: "s3"}, false); err == nil || err.Error() != "Password config can be defined only at broker level" {
		t.Fatalf("default-level password: %v", err)
	}
	noSecret := NewDynamicBrokerConfig(staticTestConfig(t, nil))
	if _, err := noSecret.ToPersistentProps(map[string]string{key: "s3"}, true); err == nil || err.Error() != "Password encoder secret not configured" {
		t.Fatalf("without a secret: %v", err)
	}
	// A broker without the secret ignores stored passwords it cannot decode.
	if back := noSecret.FromPersistentProps(p, true); back[key] != "" || back["log.retention.ms"] != "5" {
		t.Fatalf("undecodable password kept: %v", back)
	}
}

// TestConfigHandlerRoutesEntityChanges: clients/ and users/ notifications reach the quota
// hook (users/<u> also the SCRAM path, skipped here without a cache), ips/ the ip hook,
// brokers/ the dynamic broker config; nil hooks are tolerated.
func TestConfigHandlerRoutesEntityChanges(t *testing.T) {
	var quotas, ips, brokers []string
	l := &configChangeListener{
		log:                 adminLogger(t),
		quotaChanged:        func(typ, name string) { quotas = append(quotas, typ+"/"+name) },
		ipChanged:           func(ip string) error { ips = append(ips, ip); return nil },
		brokerConfigChanged: func(entity string) error { brokers = append(brokers, entity); return nil },
	}
	for _, path := range []string{"clients/app", "users/alice", "users/%3Cdefault%3E/clients/app", "users/a/b",
		"ips/10.0.0.1", "ips/<default>", "brokers/<default>", "brokers/1"} {
		l.processNotification("/config/changes/config_change_0000000001", zkmeta.EncodeConfigChange(path))
	}
	want := []string{"clients/app", "users/alice", "users/%3Cdefault%3E/clients/app"}
	if strings.Join(quotas, " ") != strings.Join(want, " ") {
		t.Errorf("quota notifications %v, want %v", quotas, want)
	}
	if strings.Join(ips, " ") != "10.0.0.1 <default>" || strings.Join(brokers, " ") != "<default> 1" {
		t.Errorf("ip notifications %v, broker notifications %v", ips, brokers)
	}
	bare := &configChangeListener{log: adminLogger(t)}
	for _, path := range []string{"clients/app", "users/alice", "ips/10.0.0.1", "brokers/1"} {
		bare.processNotification("/config/changes/config_change_0000000002", zkmeta.EncodeConfigChange(path))
	}
}
