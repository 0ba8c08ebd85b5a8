package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// validateFeatureUpdate answers each case with KafkaController.validateFeatureUpdate's
// error text, for the empty supported-feature set of a ZooKeeper-mode broker and for a
// supported feature (as a KRaft-era broker would have).
func TestValidateFeatureUpdate(t *testing.T) {
	const notSupported = "Could not apply finalized feature update because the provided feature is not supported."
	cases := []struct {
		name     string
		u        featureUpdate
		existing int16
		exists   bool
		wantMsg  string // "" = valid
		wantDel  bool
		wantLvl  int16
	}{
		{"empty name", featureUpdate{"", 1, UpgradeTypeUpgrade}, 0, false, "Feature name can not be empty.", false, 0},
		{"unknown type", featureUpdate{"f", 1, UpgradeTypeUnknown}, 0, false, "Received unknown upgrade type.", false, 0},
		{"delete missing", featureUpdate{"f", 0, UpgradeTypeSafeDowngrade}, 0, false, "Can not delete non-existing finalized feature.", false, 0},
		{"delete existing", featureUpdate{"f", 0, UpgradeTypeUnsafeDowngrade}, 2, true, "", true, 0},
		{"negative upgrade", featureUpdate{"f", -1, UpgradeTypeUpgrade}, 0, false, "Can not provide versionLevel: -1 less than 1 without setting the SAFE downgradeType in the request.", false, 0},
		{"same level upgrade", featureUpdate{"f", 2, UpgradeTypeUpgrade}, 2, true, "Can not upgrade a finalized feature from existing versionLevel:2 to the same value.", false, 0},
		{"same level downgrade", featureUpdate{"f", 2, UpgradeTypeSafeDowngrade}, 2, true, "Can not downgrade a finalized feature from existing versionLevel:2 to the same value.", false, 0},
		{"downgrade as upgrade", featureUpdate{"f", 1, UpgradeTypeUpgrade}, 2, true, "Can not downgrade finalized feature from existing versionLevel:2 to provided versionLevel:1 without setting the downgradeType to SAFE in the request.", false, 0},
		{"unsafe downgrade lower", featureUpdate{"f", 1, UpgradeTypeUnsafeDowngrade}, 2, true, "Can not downgrade finalized feature from existing versionLevel:2 to provided versionLevel:1 without setting the downgradeType to SAFE in the request.", false, 0},
		{"downgrade upwards", featureUpdate{"f", 3, UpgradeTypeSafeDowngrade}, 2, true, "When the downgradeType is set to SAFE in the request, the provided versionLevel:3 can not be greater than existing versionLevel:2.", false, 0},
		{"unsupported upgrade", featureUpdate{"f", 3, UpgradeTypeUpgrade}, 2, true, notSupported, false, 0},
		{"unsupported new", featureUpdate{"f", 1, UpgradeTypeUpgrade}, 0, false, notSupported, false, 0},
		{"supported new", featureUpdate{"s", 2, UpgradeTypeUpgrade}, 0, false, "", false, 2},
		{"supported too high", featureUpdate{"s", 5, UpgradeTypeUpgrade}, 0, false, "Could not apply finalized feature update because the provided versionLevel:5 is lower than the supported minVersion:1.", false, 0},
		{"supported downgrade", featureUpdate{"s", 1, UpgradeTypeSafeDowngrade}, 3, true, "", false, 1},
	}
	saved := SupportedFeatures
	SupportedFeatures = map[string]zkmeta.SupportedVersionRange{"s": {MinVersion: 1, MaxVersion: 3}}
	defer func() { SupportedFeatures = saved }()
	for _, c := range cases {
		lvl, del, ferr := validateFeatureUpdate(c.u, c.existing, c.exists)
		switch {
		case c.wantMsg == "" && ferr != nil:
			t.Errorf("%s: unexpected error %s", c.name, *ferr.msg)
		case c.wantMsg != "" && (ferr == nil || ferr.code != 42 || *ferr.msg != c.wantMsg):
			t.Errorf("%s: got %+v, want INVALID_REQUEST %q", c.name, ferr, c.wantMsg)
		case c.wantMsg == "" && (del != c.wantDel || lvl != c.wantLvl):
			t.Errorf("%s: level %d delete %v, want %d %v", c.name, lvl, del, c.wantLvl, c.wantDel)
		}
	}
}

// featureUpdates reads v0's allow_downgrade and v1's upgrade_type as UpdateFeaturesRequest
// does; an out-of-range type is UNKNOWN; a repeated name reads as its first entry.
func TestFeatureUpdatesFromRequest(t *testing.T) {
	mk := func(v int16, items ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesRequest {
		r := kmsg.NewPtrUpdateFeaturesRequest()
		r.Version = v
		r.FeatureUpdates = items
		return r
	}
	item := func(name string, level int16, allow bool, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
		k := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		k.Feature, k.MaxVersionLevel, k.AllowDowngrade, k.UpgradeType = name, level, allow, typ
		return k
	}
	got := featureUpdates(mk(0, item("a", 1, true, 3), item("b", 2, false, 3)))
	if got[0].upgradeType != UpgradeTypeSafeDowngrade || got[1].upgradeType != UpgradeTypeUpgrade {
		t.Fatalf("v0: %+v", got)
	}
	got = featureUpdates(mk(1, item("a", 1, true, 3), item("b", 1, false, 9), item("c", 1, false, 0), item("a", 5, false, 1)))
	want := []featureUpdate{{"a", 1, 3}, {"b", 1, 0}, {"c", 1, 0}, {"a", 1, 3}}
	if len(got) != len(want) {
		t.Fatalf("v1: %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("v1 item %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if !(featureUpdate{"a", 0, UpgradeTypeSafeDowngrade}).isDelete() || (featureUpdate{"a", 0, UpgradeTypeUpgrade}).isDelete() {
		t.Fatal("isDelete")
	}
}

// A failed write (or wait) turns only the successful results into FEATURE_UPDATE_FAILED.
func TestFeatureUpdateFailed(t *testing.T) {
	resp := kmsg.NewPtrUpdateFeaturesResponse()
	ok, bad := kmsg.NewUpdateFeaturesResponseResult(), kmsg.NewUpdateFeaturesResponseResult()
	ok.Feature, ok.ErrorMessage = "ok", &noneMessage
	msg := "no"
	bad.Feature, bad.ErrorCode, bad.ErrorMessage = "bad", 42, &msg
	resp.Results = append(resp.Results, ok, bad)
	featureUpdateFailed(resp)
	if r := resp.Results[0]; r.ErrorCode != 96 || *r.ErrorMessage != "Unable to update finalized features due to an unexpected server error." {
		t.Fatalf("ok result: %+v", r)
	}
	if r := resp.Results[1]; r.ErrorCode != 42 || *r.ErrorMessage != "no" {
		t.Fatalf("bad result: %+v", r)
	}
}
