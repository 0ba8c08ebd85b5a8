package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// UpdateFeatures through a running controller on a real ZooKeeper, with a supported feature
// set standing in for a broker that supports some (a ZooKeeper-mode broker supports none):
// upgrades and deletions rewrite /feature and return its new version, refused updates
// leave it alone, and a controller that is not active answers NOT_CONTROLLER.
func TestUpdateFeaturesWritesFeatureZNode(t *testing.T) {
	saved := SupportedFeatures
	SupportedFeatures = map[string]zkmeta.SupportedVersionRange{"x": {MinVersion: 1, MaxVersion: 3}, "y": {MinVersion: 1, MaxVersion: 1}}
	t.Cleanup(func() { SupportedFeatures = saved })

	zk := connectZK(t, sharedZK(t).Connect(uniqueChroot("features")))
	if err := zk.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	cache := &zkFeatureCache{zk: zk}
	c := newController(Config{BrokerID: 1, Log: testLog(t), Features: cache}, zk, kclientDial)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := func(items ...featureUpdate) *kmsg.UpdateFeaturesRequest {
		r := kmsg.NewPtrUpdateFeaturesRequest()
		r.Version = 1
		for _, u := range items {
			k := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			k.Feature, k.MaxVersionLevel, k.UpgradeType = u.feature, u.level, u.upgradeType
			r.FeatureUpdates = append(r.FeatureUpdates, k)
		}
		return r
	}
	if resp := c.UpdateFeatures(ctx, req(featureUpdate{"x", 2, UpgradeTypeUpgrade})); resp.ErrorCode != notControllerCode ||
		*resp.ErrorMessage != "This is not the correct controller for this cluster." {
		t.Fatalf("before election: %+v", resp)
	}
	runController(t, c)
	waitFor(t, 10*time.Second, "active controller and /feature", func() bool {
		ok, _, _ := zk.Exists(zkmeta.FeaturePath)
		return c.IsActive() && ok
	})
	// The failover created /feature with the default finalized features: every supported
	// feature at its max level (BrokerFeatures.defaultFinalizedFeatures).
	waitFor(t, 5*time.Second, "default features", func() bool {
		data, _, _ := zk.Get(zkmeta.FeaturePath)
		return string(data) == `{"features":{"x":{"max_version_level":3},"y":{"max_version_level":1}},"version":2,"status":1}`
	})

	check := func(name string, r *kmsg.UpdateFeaturesRequest, wantEpoch int32, wantNode string, want map[string]string) {
		t.Helper()
		resp := c.UpdateFeatures(ctx, r)
		if resp.ErrorCode != 0 {
			t.Fatalf("%s: top-level %d", name, resp.ErrorCode)
		}
		if len(resp.Results) != len(want) {
			t.Fatalf("%s: results %+v", name, resp.Results)
		}
		for _, res := range resp.Results {
			if got := *res.ErrorMessage; got != want[res.Feature] {
				t.Errorf("%s: %s = %d %q, want %q", name, res.Feature, res.ErrorCode, got, want[res.Feature])
			}
		}
		data, st, err := zk.Get(zkmeta.FeaturePath)
		if err != nil || string(data) != wantNode || (wantEpoch >= 0 && st.Version != wantEpoch) {
			t.Fatalf("%s: /feature %s (version %d), want %s", name, data, st.Version, wantNode)
		}
	}
	check("safe downgrade and delete", req(featureUpdate{"x", 2, UpgradeTypeSafeDowngrade}, featureUpdate{"y", 0, UpgradeTypeUnsafeDowngrade}, featureUpdate{"z", 1, UpgradeTypeUpgrade}),
		1, `{"features":{"x":{"max_version_level":2}},"version":2,"status":1}`,
		map[string]string{"x": "NONE", "y": "NONE", "z": "Could not apply finalized feature update because the provided feature is not supported."})
	check("upgrade and re-add", req(featureUpdate{"x", 3, UpgradeTypeUpgrade}, featureUpdate{"y", 1, UpgradeTypeUpgrade}),
		2, `{"features":{"x":{"max_version_level":3},"y":{"max_version_level":1}},"version":2,"status":1}`,
		map[string]string{"x": "NONE", "y": "NONE"})
	check("all refused: no write", req(featureUpdate{"x", 3, UpgradeTypeUpgrade}, featureUpdate{"q", 0, UpgradeTypeSafeDowngrade}),
		-1, `{"features":{"x":{"max_version_level":3},"y":{"max_version_level":1}},"version":2,"status":1}`,
		map[string]string{"x": "Can not upgrade a finalized feature from existing versionLevel:3 to the same value.",
			"q": "Can not delete non-existing finalized feature."})
	if _, st, _ := zk.Get(zkmeta.FeaturePath); st.Version != 2 {
		t.Fatalf("/feature written by a refused request: version %d", st.Version)
	}
	// The cache does not reach the written epoch within timeout_ms: the written updates are
	// FEATURE_UPDATE_FAILED, the refused one keeps its error.
	cache.stuck.Store(true)
	r := req(featureUpdate{"y", 0, UpgradeTypeSafeDowngrade}, featureUpdate{"w", 1, UpgradeTypeUpgrade})
	r.TimeoutMillis = 50
	check("cache behind", r, 3, `{"features":{"x":{"max_version_level":3}},"version":2,"status":1}`,
		map[string]string{"y": "Unable to update finalized features due to an unexpected server error.",
			"w": "Could not apply finalized feature update because the provided feature is not supported."})
}

// zkFeatureCache stands in for the broker's cache: it reads /feature itself; stuck makes
// WaitForEpoch never succeed.
type zkFeatureCache struct {
	zk    *zkmeta.Client
	stuck atomic.Bool
}

func (c *zkFeatureCache) Finalized() (map[string]int16, int64) {
	f, v, err := c.zk.GetFeatureZNode()
	if err != nil || f.Status != zkmeta.FeatureStatusEnabled {
		return nil, -1
	}
	return f.Features, int64(v)
}

func (c *zkFeatureCache) WaitForEpoch(ctx context.Context, epoch int64) error {
	for {
		if _, v := c.Finalized(); v >= epoch && !c.stuck.Load() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
