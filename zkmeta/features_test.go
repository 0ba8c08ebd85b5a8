package zkmeta

import (
	"errors"
	"testing"
)

// The JSON is byte-for-byte what Kafka 3.7's FeatureZNode.encode writes (keys in the order
// of its HashMap: features, version, status; V1 features carry both level keys).
func TestFeatureZNodeCodec(t *testing.T) {
	cases := []struct {
		name string
		f    FeatureZNode
		want string
	}{
		{"v2 empty", FeatureZNode{Version: 2, Status: FeatureStatusEnabled, Features: map[string]int16{}},
			`{"features":{},"version":2,"status":1}`},
		{"zero version writes v2", FeatureZNode{Status: FeatureStatusDisabled}, `{"features":{},"version":2,"status":0}`},
		{"v2 features", FeatureZNode{Version: 2, Status: FeatureStatusEnabled, Features: map[string]int16{"b": 3, "a": 1}},
			`{"features":{"a":{"max_version_level":1},"b":{"max_version_level":3}},"version":2,"status":1}`},
		{"v1 features", FeatureZNode{Version: 1, Status: FeatureStatusEnabled, Features: map[string]int16{"a": 2}},
			`{"features":{"a":{"max_version_level":2,"min_version_level":2}},"version":1,"status":1}`},
	}
	for _, c := range cases {
		got := string(EncodeFeatureZNode(c.f))
		if got != c.want {
			t.Errorf("%s: encode = %s, want %s", c.name, got, c.want)
			continue
		}
		back, err := DecodeFeatureZNode([]byte(got))
		want := c.f
		if want.Version == 0 {
			want.Version = 2
		}
		if want.Features == nil {
			want.Features = map[string]int16{}
		}
		if err != nil || !back.Equal(want) {
			t.Errorf("%s: decode = %v %v, want %v", c.name, back, err, want)
		}
	}

	bad := []string{
		`not json`,
		`{"features":{},"status":1}`,
		`{"features":{},"version":3,"status":1}`,
		`{"features":{},"version":0,"status":1}`,
		`{"features":{},"version":2}`,
		`{"features":{},"version":2,"status":2}`,
		`{"version":2,"status":1}`,
		`{"features":{"a":{"max_version_level":0}},"version":2,"status":1}`,
		`{"features":{"a":{}},"version":2,"status":1}`,
		`{"features":{"a":{"max_version_level":2}},"version":1,"status":1}`,
		`{"features":{"a":{"min_version_level":0,"max_version_level":2}},"version":1,"status":1}`,
		`{"features":{"a":{"min_version_level":3,"max_version_level":2}},"version":1,"status":1}`,
	}
	for _, b := range bad {
		if f, err := DecodeFeatureZNode([]byte(b)); !errors.Is(err, ErrBadJSON) {
			t.Errorf("decode %s = %v, %v; want ErrBadJSON", b, f, err)
		}
	}
	// A V2 node may still carry min_version_level (written by V1 code): it is ignored.
	if f, err := DecodeFeatureZNode([]byte(`{"features":{"a":{"min_version_level":1,"max_version_level":2}},"version":2,"status":1}`)); err != nil || f.Features["a"] != 2 {
		t.Errorf("v2 with min level = %v, %v", f, err)
	}
}

func TestFeatureVersioningFromIBP(t *testing.T) {
	cases := []struct {
		ibp     string
		enabled bool
		version int32
	}{
		{"", true, 2}, {"3.7-IV4", true, 2}, {"3.7", true, 2}, {"3.3-IV0", true, 2}, {"3.3", true, 2},
		{"3.2-IV0", true, 1}, {"3.0", true, 1}, {"2.8-IV1", true, 1}, {"2.7-IV0", true, 1}, {"2.7", true, 1},
		{"2.6-IV0", false, 1}, {"2.6", false, 1}, {"1.1", false, 1}, {"0.10.2-IV0", false, 1}, {"0.8.0", false, 1},
		{"4.0", true, 2}, {"1.0.1", false, 1},
	}
	for _, c := range cases {
		enabled, version, err := FeatureVersioning(c.ibp)
		if err != nil || enabled != c.enabled || version != c.version {
			t.Errorf("FeatureVersioning(%q) = %v, %d, %v; want %v, %d", c.ibp, enabled, version, err, c.enabled, c.version)
		}
	}
	for _, bad := range []string{"x", "3", "a.b", "-1.2"} {
		if _, _, err := FeatureVersioning(bad); err == nil {
			t.Errorf("FeatureVersioning(%q) accepted", bad)
		}
	}
}

// SetupFeatureVersioning against a real ZooKeeper follows KafkaController's
// enableFeatureVersioning / disableFeatureVersioning case by case.
func TestSetupFeatureVersioning(t *testing.T) {
	c := newClient(t)
	read := func() (string, int32) {
		t.Helper()
		data, st, err := c.Get(FeaturePath)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), st.Version
	}
	set := func(data string) {
		t.Helper()
		if _, err := c.Set(FeaturePath, []byte(data), -1); err != nil {
			t.Fatal(err)
		}
	}
	step := func(name, ibp string, defaults map[string]int16, wantWait int32, wantData string, wantVersion int32) {
		t.Helper()
		wait, err := c.SetupFeatureVersioning(ibp, defaults)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, version := read()
		if wait != wantWait || data != wantData || version != wantVersion {
			t.Fatalf("%s: wait %d, /feature %s (version %d); want wait %d, %s (version %d)", name, wait, data, version, wantWait, wantData, wantVersion)
		}
	}
	if _, _, err := c.GetFeatureZNode(); !errors.Is(err, ErrNoNode) {
		t.Fatalf("missing node: %v", err)
	}
	// Missing: created enabled with the default finalized features; wait for version 0.
	step("create", "3.7-IV4", map[string]int16{}, 0, `{"features":{},"version":2,"status":1}`, 0)
	// Already as wanted: no write.
	step("unchanged", "", nil, -1, `{"features":{},"version":2,"status":1}`, 0)
	// Disabled with features: enabled, features dropped.
	set(`{"features":{"x":{"min_version_level":1,"max_version_level":2}},"version":1,"status":0}`)
	step("re-enable", "3.7-IV4", nil, 2, `{"features":{},"version":2,"status":1}`, 2)
	// Enabled in V1 under a 3.3+ IBP: rewritten as V2, features kept.
	set(`{"features":{"x":{"min_version_level":1,"max_version_level":2}},"version":1,"status":1}`)
	step("v1 to v2", "3.7", nil, 4, `{"features":{"x":{"max_version_level":2}},"version":2,"status":1}`, 4)
	// IBP 3.0: V1 JSON.
	step("v2 to v1", "3.0-IV1", nil, 5, `{"features":{"x":{"max_version_level":2,"min_version_level":2}},"version":1,"status":1}`, 5)
	// IBP below 2.7: disabled and emptied, nothing to wait for.
	step("disable", "2.6-IV0", nil, -1, `{"features":{},"version":1,"status":0}`, 6)
	step("disabled unchanged", "2.6", nil, -1, `{"features":{},"version":1,"status":0}`, 6)
	f, v, err := c.GetFeatureZNode()
	if err != nil || v != 6 || f.Status != FeatureStatusDisabled {
		t.Fatalf("GetFeatureZNode = %v %d %v", f, v, err)
	}
	// UpdateFeatureZNode is an unconditional write returning the new version.
	if v, err := c.UpdateFeatureZNode(FeatureZNode{Version: 2, Status: FeatureStatusEnabled, Features: map[string]int16{"y": 1}}); err != nil || v != 7 {
		t.Fatalf("UpdateFeatureZNode = %d, %v", v, err)
	}
	// A node that does not decode fails the set-up (Kafka's decode throws).
	set(`{"features":{},"version":9,"status":1}`)
	if _, err := c.SetupFeatureVersioning("", nil); !errors.Is(err, ErrBadJSON) {
		t.Fatalf("bad node: %v", err)
	}
	// The watch fires on a change.
	ch, err := c.WatchFeatureZNode()
	if err != nil {
		t.Fatal(err)
	}
	set(`{"features":{},"version":2,"status":1}`)
	if ev := <-ch; ev.Type != EventNodeDataChanged {
		t.Fatalf("watch event %+v", ev)
	}
	// Missing node on a fresh chroot with versioning off: created disabled.
	c2 := newClient(t)
	if wait, err := c2.SetupFeatureVersioning("2.0", nil); err != nil || wait != -1 {
		t.Fatal(wait, err)
	}
	if data, _, err := c2.Get(FeaturePath); err != nil || string(data) != `{"features":{},"version":1,"status":0}` {
		t.Fatalf("disabled create: %s %v", data, err)
	}
}
