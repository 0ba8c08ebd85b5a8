package zkmeta

// features.go — the /feature znode (Kafka's FeatureZNode in ZkData.scala) and the ZooKeeper
// side of KIP-584 feature versioning in ZooKeeper mode: the controller's
// enableFeatureVersioning / disableFeatureVersioning (KafkaController.maybeSetupFeatureVersioning)
// and the plain setData of KafkaZkClient.updateFeatureZNode. The broker's cache of the
// finalized features (FinalizedFeatureChangeListener) lives in broker/features.go.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Feature znode status values (FeatureZNodeStatus).
const (
	FeatureStatusDisabled int32 = 0
	FeatureStatusEnabled  int32 = 1
)

// Feature znode JSON versions: V1 has min_version_level and max_version_level per feature,
// V2 (written from inter.broker.protocol.version 3.3-IV0 on) only max_version_level.
const (
	FeatureZNodeV1 int32 = 1
	FeatureZNodeV2 int32 = 2
)

// FeatureZNode is /feature: cluster-wide finalized features (name → max version level).
type FeatureZNode struct {
	Version  int32
	Status   int32
	Features map[string]int16
}

// Equal is the case-class equality Kafka uses to skip a needless write.
func (f FeatureZNode) Equal(o FeatureZNode) bool {
	if f.Version != o.Version || f.Status != o.Status || len(f.Features) != len(o.Features) {
		return false
	}
	for n, v := range f.Features {
		if ov, ok := o.Features[n]; !ok || ov != v {
			return false
		}
	}
	return true
}

// String is for logs, in the shape of Kafka's FeatureZNode.toString.
func (f FeatureZNode) String() string {
	names := make([]string, 0, len(f.Features))
	for n := range f.Features {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " -> " + strconv.Itoa(int(f.Features[n]))
	}
	status := "Disabled"
	if f.Status == FeatureStatusEnabled {
		status = "Enabled"
	}
	return fmt.Sprintf("FeatureZNode(%d,%s,Map(%s))", f.Version, status, strings.Join(parts, ", "))
}

// EncodeFeatureZNode is FeatureZNode.encode: {"features":{...},"version":2,"status":1}, with
// both level keys per feature in version 1. A zero Version writes version 2.
func EncodeFeatureZNode(f FeatureZNode) []byte {
	version := f.Version
	if version != FeatureZNodeV1 {
		version = FeatureZNodeV2
	}
	names := make([]string, 0, len(f.Features))
	for n := range f.Features {
		names = append(names, n)
	}
	sort.Strings(names)
	feats := newObj()
	for _, n := range names {
		v := newObj()
		v.num("max_version_level", int64(f.Features[n]))
		if version == FeatureZNodeV1 {
			v.num("min_version_level", int64(f.Features[n]))
		}
		feats.raw(n, v.bytes())
	}
	o := newObj()
	o.raw("features", feats.bytes())
	o.num("version", int64(version))
	o.num("status", int64(f.Status))
	return o.bytes()
}

// DecodeFeatureZNode is FeatureZNode.decode: versions 1 and 2, a known status, a features
// map, max_version_level >= 1 (and 1 <= min <= max in version 1). Errors wrap ErrBadJSON.
func DecodeFeatureZNode(data []byte) (FeatureZNode, error) {
	var raw struct {
		Version  *int32                       `json:"version"`
		Status   *int32                       `json:"status"`
		Features map[string]map[string]*int32 `json:"features"`
	}
	bad := func(why string) (FeatureZNode, error) {
		return FeatureZNode{}, fmt.Errorf("%w: feature znode %q: %s", ErrBadJSON, data, why)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return bad(err.Error())
	}
	switch {
	case raw.Version == nil || *raw.Version < FeatureZNodeV1 || *raw.Version > FeatureZNodeV2:
		return bad("unsupported version")
	case raw.Status == nil:
		return bad("status can not be absent")
	case *raw.Status != FeatureStatusDisabled && *raw.Status != FeatureStatusEnabled:
		return bad("malformed status")
	case raw.Features == nil:
		return bad("features map can not be absent")
	}
	f := FeatureZNode{Version: *raw.Version, Status: *raw.Status, Features: make(map[string]int16, len(raw.Features))}
	for n, levels := range raw.Features {
		maxV := levels["max_version_level"]
		minV, hasMin := levels["min_version_level"]
		if f.Version == FeatureZNodeV1 && (!hasMin || minV == nil) {
			return bad("min_version_level absent for " + n)
		}
		if maxV == nil {
			return bad("max_version_level absent for " + n)
		}
		if f.Version == FeatureZNodeV1 && (*minV < 1 || *maxV < *minV) {
			return bad("expected 1 <= min_version_level <= max_version_level for " + n)
		}
		if *maxV < 1 {
			return bad("expected max_version_level >= 1 for " + n)
		}
		f.Features[n] = int16(*maxV)
	}
	return f, nil
}

// FeatureVersioning reads an inter.broker.protocol.version (MetadataVersion.fromVersionString
// forms: "2.7", "2.7-IV0", "0.10.2-IV0", "3.7-IV4") as the two things ZooKeeper mode derives
// from it for features: whether versioning is on (isFeatureVersioningSupported, 2.7-IV0 and
// later) and the /feature JSON version to write (V2 from 3.3-IV0 on). "" is the default IBP.
func FeatureVersioning(ibp string) (enabled bool, znodeVersion int32, err error) {
	if ibp == "" {
		return true, FeatureZNodeV2, nil
	}
	release, _, _ := strings.Cut(ibp, "-")
	seg := strings.Split(release, ".")
	if len(seg) < 2 {
		return false, 0, fmt.Errorf("version %s is not a valid version", ibp)
	}
	major, err1 := strconv.Atoi(seg[0])
	minor, err2 := strconv.Atoi(seg[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return false, 0, fmt.Errorf("version %s is not a valid version", ibp)
	}
	if major == 0 { // 0.x.y: every one predates feature versioning
		return false, FeatureZNodeV1, nil
	}
	atLeast := func(ma, mi int) bool { return major > ma || (major == ma && minor >= mi) }
	znodeVersion = FeatureZNodeV1
	if atLeast(3, 3) {
		znodeVersion = FeatureZNodeV2
	}
	return atLeast(2, 7), znodeVersion, nil
}

// GetFeatureZNode reads /feature and its znode version (Kafka's feature epoch). A missing
// node is ErrNoNode; an undecodable one wraps ErrBadJSON and still returns the version.
func (c *Client) GetFeatureZNode() (FeatureZNode, int32, error) {
	data, st, err := c.Get(FeaturePath)
	if err != nil {
		return FeatureZNode{}, -1, err
	}
	f, err := DecodeFeatureZNode(data)
	return f, st.Version, err
}

// WatchFeatureZNode arms a one-shot watch on /feature that fires on its creation, data
// change or deletion (Kafka's registerZNodeChangeHandlerAndCheckExistence).
func (c *Client) WatchFeatureZNode() (<-chan Event, error) {
	_, ch, err := c.ExistsW(FeaturePath)
	return ch, err
}

// UpdateFeatureZNode is KafkaZkClient.updateFeatureZNode: an unconditional setData. It
// returns the new znode version.
func (c *Client) UpdateFeatureZNode(f FeatureZNode) (int32, error) {
	st, err := c.Set(FeaturePath, EncodeFeatureZNode(f), -1)
	if err != nil {
		return -1, fmt.Errorf("update %s: %w", FeaturePath, err)
	}
	return st.Version, nil
}

// createFeatureZNode is KafkaZkClient.createFeatureZNode followed by the version read-back
// of KafkaController.createFeatureZNode.
func (c *Client) createFeatureZNode(f FeatureZNode) (int32, error) {
	if err := c.CreateRecursive(FeaturePath, EncodeFeatureZNode(f)); err != nil {
		return -1, fmt.Errorf("create %s: %w", FeaturePath, err)
	}
	_, st, err := c.Get(FeaturePath)
	if err != nil {
		return -1, err
	}
	return st.Version, nil
}

// SetupFeatureVersioning is KafkaController.maybeSetupFeatureVersioning, run at controller
// failover. With versioning on (ibp >= 2.7-IV0) the node is created enabled with the
// default finalized features (none for a ZooKeeper-mode broker, which supports none), or
// switched to enabled (a disabled node's features are dropped), or left alone when already
// as wanted. With versioning off it is made disabled and empty. It returns the epoch the
// caller should wait for its feature cache to reach, or -1 when nothing needs waiting
// (versioning off, or no write).
func (c *Client) SetupFeatureVersioning(ibp string, defaultFinalized map[string]int16) (waitEpoch int32, err error) {
	enabled, version, err := FeatureVersioning(ibp)
	if err != nil {
		return -1, err
	}
	existing, _, err := c.GetFeatureZNode()
	missing := errors.Is(err, ErrNoNode)
	if err != nil && !missing {
		return -1, err
	}
	if !enabled {
		want := FeatureZNode{Version: version, Status: FeatureStatusDisabled, Features: map[string]int16{}}
		switch {
		case missing:
			_, err = c.createFeatureZNode(want)
		case !want.Equal(existing):
			_, err = c.UpdateFeatureZNode(want)
		}
		return -1, err
	}
	if missing {
		feats := make(map[string]int16, len(defaultFinalized))
		for n, v := range defaultFinalized {
			feats[n] = v
		}
		return c.createFeatureZNode(FeatureZNode{Version: version, Status: FeatureStatusEnabled, Features: feats})
	}
	feats := existing.Features
	if existing.Status == FeatureStatusDisabled {
		feats = map[string]int16{}
	}
	want := FeatureZNode{Version: version, Status: FeatureStatusEnabled, Features: feats}
	if want.Equal(existing) {
		return -1, nil
	}
	return c.UpdateFeatureZNode(want)
}
