package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() {
	// Built by hand (no controller): the broker answers NOT_CONTROLLER.
	requestBuilders[57] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrUpdateFeaturesRequest()
			k := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			k.Feature, k.MaxVersionLevel = "f", 1
			req.FeatureUpdates = append(req.FeatureUpdates, k)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.UpdateFeaturesResponse)
			if resp.ErrorCode != kerr.NotController.Code || resp.ErrorMessage == nil ||
				*resp.ErrorMessage != "This is not the correct controller for this cluster." {
				t.Fatalf("update features: %+v", resp)
			}
		},
	}
}

// featureState is what ApiVersions v3 reports about features.
func featureState(t *testing.T, b *Broker) (epoch int64, finalized map[string]int16, supported int) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-test", "1"
	resp := adminDial(t, b.Addr("PLAINTEXT")).request(req, 3).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %d", resp.ErrorCode)
	}
	finalized = map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Fatalf("finalized %s: min %d != max %d", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		finalized[f.Name] = f.MaxVersionLevel
	}
	return resp.FinalizedFeaturesEpoch, finalized, len(resp.SupportedFeatures)
}

func waitFeatureEpoch(t *testing.T, want int64, brokers ...*Broker) {
	t.Helper()
	for _, b := range brokers {
		adminWaitFor(t, 15*time.Second, "feature epoch", func() bool {
			epoch, fin, sup := featureState(t, b)
			return epoch == want && len(fin) == 0 && sup == 0
		})
	}
}

type featureItem struct {
	name  string
	level int16
	typ   int8
	allow bool
}

func updateFeaturesReq(v int16, items ...featureItem) *kmsg.UpdateFeaturesRequest {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 10000
	for _, it := range items {
		k := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		k.Feature, k.MaxVersionLevel, k.UpgradeType, k.AllowDowngrade = it.name, it.level, it.typ, it.allow
		req.FeatureUpdates = append(req.FeatureUpdates, k)
	}
	return req
}

func featureResults(resp *kmsg.UpdateFeaturesResponse) map[string]string {
	out := map[string]string{}
	for _, r := range resp.Results {
		msg := "<nil>"
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		out[r.Feature] = kerr.ErrorForCode(r.ErrorCode).(*kerr.Error).Message + ": " + msg
	}
	return out
}

// Two brokers on a real ZooKeeper: /feature as Kafka 3.7's controller writes it, the epoch
// every broker reports in ApiVersions v3 following the znode (disabled → -1, a new
// controller re-enabling it, a rewrite), UpdateFeatures' answers from the controller and
// from another broker, and the brokers failing on a finalized feature they do not support.
func TestFeaturesZooKeeperMode(t *testing.T) {
	chroot := testChroot(t)
	b1 := startTestBroker(t, chroot, map[string]string{"broker.id": "1"})
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2"})
	brokers := []*Broker{b1, b2}
	var ctrl, other *Broker
	adminWaitFor(t, 15*time.Second, "a controller", func() bool {
		for i, b := range brokers {
			if b.Controller().IsActive() {
				ctrl, other = b, brokers[1-i]
				return true
			}
		}
		return false
	})
	zk := b1.ZK()
	adminWaitFor(t, 15*time.Second, "/feature", func() bool {
		ok, _, err := zk.Exists(zkmeta.FeaturePath)
		return ok && err == nil
	})
	data, st, err := zk.Get(zkmeta.FeaturePath)
	if err != nil || string(data) != `{"features":{},"version":2,"status":1}` || st.Version != 0 {
		t.Fatalf("/feature = %s (version %d), %v", data, st.Version, err)
	}
	waitFeatureEpoch(t, 0, b1, b2)

	// Not the controller.
	resp := adminDial(t, other.Addr("PLAINTEXT")).request(updateFeaturesReq(1, featureItem{"foo", 1, 1, false}), 1).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != kerr.NotController.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "This is not the correct controller for this cluster." || len(resp.Results) != 0 {
		t.Fatalf("update on a non-controller: %+v", resp)
	}
	// The controller validates each update; a ZooKeeper-mode broker supports no feature.
	cc := adminDial(t, ctrl.Addr("PLAINTEXT"))
	resp = cc.request(updateFeaturesReq(1,
		featureItem{"foo", 1, 1, false},
		featureItem{"bar", 0, 2, false},
		featureItem{"baz", 1, 7, false},
		featureItem{"", 1, 1, false},
		featureItem{"neg", 0, 1, false},
	), 1).(*kmsg.UpdateFeaturesResponse)
	got := featureResults(resp)
	want := map[string]string{
		"foo": "INVALID_REQUEST: Could not apply finalized feature update because the provided feature is not supported.",
		"bar": "INVALID_REQUEST: Can not delete non-existing finalized feature.",
		"baz": "INVALID_REQUEST: Received unknown upgrade type.",
		"":    "INVALID_REQUEST: Feature name can not be empty.",
		"neg": "INVALID_REQUEST: Can not provide versionLevel: 0 less than 1 without setting the SAFE downgradeType in the request.",
	}
	if resp.ErrorCode != 0 || resp.ErrorMessage != nil || len(got) != len(want) {
		t.Fatalf("update results: %+v", resp)
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("feature %q: %s, want %s", n, got[n], w)
		}
	}
	// v0: allow_downgrade with level 0 is a deletion.
	resp = cc.request(updateFeaturesReq(0, featureItem{"old", 0, 0, true}), 0).(*kmsg.UpdateFeaturesResponse)
	if g := featureResults(resp)["old"]; g != "INVALID_REQUEST: Can not delete non-existing finalized feature." {
		t.Fatalf("v0 delete: %s", g)
	}
	if _, st, _ := zk.Get(zkmeta.FeaturePath); st.Version != 0 {
		t.Fatalf("/feature rewritten by refused updates: version %d", st.Version)
	}

	// Disabled by hand: every broker drops its features (epoch -1).
	if _, err := zk.Set(zkmeta.FeaturePath, []byte(`{"features":{},"version":2,"status":0}`), -1); err != nil {
		t.Fatal(err)
	}
	waitFeatureEpoch(t, -1, b1, b2)
	// A new controller enables it again (enableFeatureVersioning): version 2.
	if err := zk.Delete(zkmeta.ControllerPath, -1); err != nil {
		t.Fatal(err)
	}
	waitFeatureEpoch(t, 2, b1, b2)
	if data, _, _ := zk.Get(zkmeta.FeaturePath); string(data) != `{"features":{},"version":2,"status":1}` {
		t.Fatalf("/feature after failover = %s", data)
	}
	// Any rewrite moves the epoch.
	if _, err := zk.Set(zkmeta.FeaturePath, []byte(`{"features":{},"version":2,"status":1}`), -1); err != nil {
		t.Fatal(err)
	}
	waitFeatureEpoch(t, 3, b1, b2)

	// A finalized feature no broker supports is fatal, as in Kafka (FeatureCacheUpdateException).
	if _, err := zk.Set(zkmeta.FeaturePath, []byte(`{"features":{"x":{"max_version_level":1}},"version":2,"status":1}`), -1); err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		select {
		case <-b.Done():
		case <-time.After(15 * time.Second):
			t.Fatalf("broker %d still running with an unsupported finalized feature", b.ID())
		}
		if err := b.Err(); !errors.Is(err, errFeatureCacheUpdate) || !strings.Contains(err.Error(), "Unsupported feature") {
			t.Fatalf("broker %d failed with %v", b.ID(), err)
		}
	}
}

// With inter.broker.protocol.version below 2.7 feature versioning is off: /feature is
// disabled, ApiVersions reports epoch -1 and UpdateFeatures is refused.
func TestFeaturesDisabledByIBP(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, testChroot(t), map[string]string{"inter.broker.protocol.version": "2.6-IV0"})
	waitController(t, b)
	adminWaitFor(t, 15*time.Second, "/feature", func() bool {
		ok, _, err := b.ZK().Exists(zkmeta.FeaturePath)
		return ok && err == nil
	})
	data, _, err := b.ZK().Get(zkmeta.FeaturePath)
	if err != nil || string(data) != `{"features":{},"version":1,"status":0}` {
		t.Fatalf("/feature = %s, %v", data, err)
	}
	waitFeatureEpoch(t, -1, b)
	resp := adminDial(t, b.Addr("PLAINTEXT")).request(updateFeaturesReq(1, featureItem{"foo", 1, 1, false}), 1).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Feature versioning system is disabled." {
		t.Fatalf("update with versioning off: %+v", resp)
	}
}

// FeatureCache: the epoch never goes backwards, unsupported features are refused, waiters
// wake on the epoch they wait for.
func TestFeatureCache(t *testing.T) {
	var nilCache *FeatureCache
	if f, e := nilCache.Finalized(); f != nil || e != -1 {
		t.Fatal("nil cache")
	}
	c := &FeatureCache{}
	if _, e := c.Finalized(); e != -1 {
		t.Fatal("empty cache epoch", e)
	}
	done := make(chan error, 1)
	go func() { done <- c.WaitForEpoch(context.Background(), 3) }()
	if err := c.update(map[string]int16{}, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.update(map[string]int16{}, 3); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.update(map[string]int16{}, 1); !errors.Is(err, errFeatureCacheUpdate) {
		t.Fatalf("epoch going back: %v", err)
	}
	if err := c.update(map[string]int16{"x": 1}, 4); !errors.Is(err, errFeatureCacheUpdate) {
		t.Fatalf("unsupported feature: %v", err)
	}
	if _, e := c.Finalized(); e != 3 {
		t.Fatalf("cache changed by a refused update: epoch %d", e)
	}
	c.clear()
	if _, e := c.Finalized(); e != -1 {
		t.Fatal("cleared epoch", e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitForEpoch(ctx, 0); err == nil {
		t.Fatal("wait on a cancelled context succeeded")
	}
	// After a clear any epoch is accepted again (the znode was deleted and re-created).
	if err := c.update(map[string]int16{}, 0); err != nil {
		t.Fatal(err)
	}
}

// UpdateFeatures needs ALTER on the cluster (KafkaApis.handleUpdateFeatures).
func TestUpdateFeaturesAuthorization(t *testing.T) {
	t.Parallel()
	e := startAuthzBroker(t)
	for _, p := range []string{"nobody", "alice", "describer", "broker", "admin", superName} {
		resp := e.req(p, false, updateFeaturesReq(1, featureItem{"foo", 1, 1, false})).(*kmsg.UpdateFeaturesResponse)
		allowed := p == "admin" || p == superName
		switch {
		case allowed && (resp.ErrorCode != 0 || featureResults(resp)["foo"] != "INVALID_REQUEST: Could not apply finalized feature update because the provided feature is not supported."):
			t.Errorf("as %s: %+v", p, resp)
		case !allowed && (resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || resp.ErrorMessage == nil ||
			*resp.ErrorMessage != "Cluster authorization failed." || len(resp.Results) != 0):
			t.Errorf("as %s: %+v, want CLUSTER_AUTHORIZATION_FAILED", p, resp)
		}
	}
}
