package controller

// features.go — KIP-584 feature versioning on the ZooKeeper-mode controller (Kafka 3.7's
// KafkaController.maybeSetupFeatureVersioning and processFeatureUpdates). At failover the
// controller makes /feature enabled (inter.broker.protocol.version >= 2.7-IV0) or disabled;
// UpdateFeatures (API 57) is processed in order with the other controller events and
// rewrites /feature. After each write the controller waits for its own broker's feature
// cache (Config.Features) to reach the new znode version. A ZooKeeper-mode broker supports
// no feature (BrokerFeatures.createEmpty), so, as in Kafka, every upgrade is refused, and
// a finalized feature left in /feature by hand stops the brokers (broker/features.go). The
// request's validate_only is ignored, as in Kafka's ZooKeeper controller.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// SupportedFeatures are the features (name → supported level range) a ZooKeeper-mode broker
// advertises: none (KafkaServer's BrokerFeatures.createEmpty()).
var SupportedFeatures = map[string]zkmeta.SupportedVersionRange{}

// Feature upgrade types (FeatureUpdate.UpgradeType codes).
const (
	UpgradeTypeUnknown         int8 = 0
	UpgradeTypeUpgrade         int8 = 1
	UpgradeTypeSafeDowngrade   int8 = 2
	UpgradeTypeUnsafeDowngrade int8 = 3
)

// FeatureCache is the broker's cache of /feature (Kafka's ZkFinalizedFeatureCache):
// Finalized returns the finalized features and their epoch (-1 when there are none), and
// WaitForEpoch returns once the cache holds at least epoch, or ctx's error.
type FeatureCache interface {
	Finalized() (map[string]int16, int64)
	WaitForEpoch(ctx context.Context, epoch int64) error
}

// defaultFeatureWait is zookeeper.connection.timeout.ms' default (the session timeout).
const defaultFeatureWait = 18 * time.Second

// featureStore is the part of zkmeta.Client feature versioning needs. The event loop's store
// interface predates it; a store without it (the in-memory fake of the step tests) keeps
// the older behaviour (EnsureFeatureZNode) and refuses updates.
type featureStore interface {
	GetFeatureZNode() (zkmeta.FeatureZNode, int32, error)
	UpdateFeatureZNode(f zkmeta.FeatureZNode) (int32, error)
	SetupFeatureVersioning(ibp string, defaultFinalized map[string]int16) (int32, error)
}

// features returns the loop's store as a featureStore, if it is one.
func (l *eventLoop) features() (featureStore, bool) {
	s := l.zk
	if g, ok := s.(sessionGuard); ok {
		s = g.store
	}
	fs, ok := s.(featureStore)
	return fs, ok
}

// setupFeatureVersioning is KafkaController.maybeSetupFeatureVersioning (onControllerFailover):
// after a write that enables versioning it waits, up to zookeeper.connection.timeout.ms,
// for this broker's feature cache to reach the written epoch; a timeout fails the failover.
func (l *eventLoop) setupFeatureVersioning() error {
	fs, ok := l.features()
	if !ok {
		_, err := l.zk.EnsureFeatureZNode()
		return err
	}
	if err := l.checkSession(); err != nil {
		return err
	}
	defaults := make(map[string]int16, len(SupportedFeatures))
	for n, r := range SupportedFeatures { // BrokerFeatures.defaultFinalizedFeatures
		defaults[n] = r.MaxVersion
	}
	epoch, err := fs.SetupFeatureVersioning(l.cfg.InterBrokerProtocolVersion, defaults)
	if err != nil {
		return fmt.Errorf("set up feature versioning: %w", err)
	}
	if epoch >= 0 && l.cfg.Features != nil {
		timeout := l.cfg.ZkConnectionTimeout
		if timeout <= 0 {
			timeout = defaultFeatureWait
		}
		ctx, cancel := context.WithTimeout(l.watchCtx, timeout)
		err := l.cfg.Features.WaitForEpoch(ctx, int64(epoch))
		cancel()
		if err != nil {
			return fmt.Errorf("set up feature versioning: %w", err)
		}
	}
	l.log.WithFields(logrus.Fields{"path": zkmeta.FeaturePath, "epoch": epoch, "ibp": l.cfg.InterBrokerProtocolVersion}).
		Info("feature versioning set up")
	return nil
}

// featureUpdate is UpdateFeaturesRequest.FeatureUpdateItem.
type featureUpdate struct {
	feature     string
	level       int16
	upgradeType int8
}

// isDelete is FeatureUpdateItem.isDeleteRequest.
func (u featureUpdate) isDelete() bool { return u.level < 1 && u.upgradeType != UpgradeTypeUpgrade }

// featureUpdates reads the request as UpdateFeaturesRequest.featureUpdates: v0's
// allow_downgrade means a safe downgrade; a repeated name reads as its first entry, as the
// request's keyed collection does.
func featureUpdates(req *kmsg.UpdateFeaturesRequest) []featureUpdate {
	first := map[string]featureUpdate{}
	out := make([]featureUpdate, 0, len(req.FeatureUpdates))
	for _, k := range req.FeatureUpdates {
		u, seen := first[k.Feature]
		if !seen {
			u = featureUpdate{feature: k.Feature, level: k.MaxVersionLevel, upgradeType: k.UpgradeType}
			if req.GetVersion() == 0 {
				u.upgradeType = UpgradeTypeUpgrade
				if k.AllowDowngrade {
					u.upgradeType = UpgradeTypeSafeDowngrade
				}
			} else if u.upgradeType < UpgradeTypeUpgrade || u.upgradeType > UpgradeTypeUnsafeDowngrade {
				u.upgradeType = UpgradeTypeUnknown
			}
			first[k.Feature] = u
		}
		out = append(out, u)
	}
	return out
}

// featureError is an ApiError: a code and an optional message.
type featureError struct {
	code int16
	msg  *string
}

func invalidFeatureRequest(msg string) featureError {
	return featureError{kerr.InvalidRequest.Code, &msg}
}

// newFinalizedVersion is KafkaController.newFinalizedVersionOrIncompatibilityError for a
// non-delete update. Brokers' own supported features (their registrations) are never
// consulted here because this broker supports none, which refuses every update first.
func newFinalizedVersion(u featureUpdate) (int16, *featureError) {
	r, ok := SupportedFeatures[u.feature]
	if !ok {
		e := invalidFeatureRequest("Could not apply finalized feature update because the provided feature is not supported.")
		return 0, &e
	}
	if u.level < r.MinVersion || u.level > r.MaxVersion {
		e := invalidFeatureRequest(fmt.Sprintf("Could not apply finalized feature update because the provided versionLevel:%d is lower than the supported minVersion:%d.", u.level, r.MinVersion))
		return 0, &e
	}
	return u.level, nil
}

// validateFeatureUpdate is KafkaController.validateFeatureUpdate: the new level (delete=true
// to remove the feature) or the error.
func validateFeatureUpdate(u featureUpdate, existing int16, exists bool) (level int16, del bool, ferr *featureError) {
	fail := func(msg string) (int16, bool, *featureError) {
		e := invalidFeatureRequest(msg)
		return 0, false, &e
	}
	switch {
	case u.feature == "":
		return fail("Feature name can not be empty.")
	case u.upgradeType == UpgradeTypeUnknown:
		return fail("Received unknown upgrade type.")
	case u.isDelete():
		if !exists {
			return fail("Can not delete non-existing finalized feature.")
		}
		return 0, true, nil
	case u.level < 1:
		return fail(fmt.Sprintf("Can not provide versionLevel: %d less than 1 without setting the SAFE downgradeType in the request.", u.level))
	case exists && u.level == existing:
		verb := "upgrade"
		if u.upgradeType == UpgradeTypeSafeDowngrade {
			verb = "downgrade"
		}
		return fail(fmt.Sprintf("Can not %s a finalized feature from existing versionLevel:%d to the same value.", verb, existing))
	case exists && u.level < existing && u.upgradeType != UpgradeTypeSafeDowngrade:
		return fail(fmt.Sprintf("Can not downgrade finalized feature from existing versionLevel:%d to provided versionLevel:%d without setting the downgradeType to SAFE in the request.", existing, u.level))
	case exists && u.upgradeType != UpgradeTypeUpgrade && u.level > existing:
		return fail(fmt.Sprintf("When the downgradeType is set to SAFE in the request, the provided versionLevel:%d can not be greater than existing versionLevel:%d.", u.level, existing))
	}
	level, ferr = newFinalizedVersion(u)
	return level, false, ferr
}

// noneMessage is the message of `new ApiError(Errors.NONE)`, which Kafka's controller puts
// on every successful feature result: Errors.NONE has no exception, so its message is the
// enum's name.
var noneMessage = "NONE"

// featureUpdateFailedMessage is FEATURE_UPDATE_FAILED's default message.
var featureUpdateFailedMessage = "Unable to update finalized features due to an unexpected server error."

// featureUpdateFailed marks the successful results of resp as FEATURE_UPDATE_FAILED, as
// processFeatureUpdates does when writing /feature or waiting for the cache fails.
func featureUpdateFailed(resp *kmsg.UpdateFeaturesResponse) {
	for i := range resp.Results {
		if resp.Results[i].ErrorCode == 0 {
			resp.Results[i].ErrorCode = kerr.FeatureUpdateFailed.Code
			resp.Results[i].ErrorMessage = &featureUpdateFailedMessage
		}
	}
}

// UpdateFeatures serves UpdateFeatures (API 57) on the active controller
// (KafkaController.updateFeatures), in order with the other controller events. A broker that
// is not the active controller answers NOT_CONTROLLER.
func (c *Controller) UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	resp, code := askLoop(ctx, c, notControllerCode, func(ch chan *kmsg.UpdateFeaturesResponse) event {
		return probeEvent{done: make(chan struct{}), fn: func(l *eventLoop) { ch <- l.processFeatureUpdates(req) }}
	})
	if code != 0 {
		resp = req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		resp.ErrorCode = code
		msg := kerr.ErrorForCode(code).(*kerr.Error).Description
		if code == notControllerCode {
			msg = "This is not the correct controller for this cluster."
		}
		resp.ErrorMessage = &msg
	}
	return resp
}

// processFeatureUpdates is KafkaController.processFeatureUpdatesWithActiveController.
// The new /feature is written, then (as Kafka, on the controller's thread) the answer
// waits up to the request's timeout_ms for this broker's cache to reach its version.
func (l *eventLoop) processFeatureUpdates(req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	fs, ok := l.features()
	existing := map[string]int16{}
	var readErr error
	switch {
	case !ok:
		readErr = errors.New("store cannot write /feature")
	case l.cfg.Features != nil:
		// The cache: none while /feature is missing or disabled.
		if f, _ := l.cfg.Features.Finalized(); f != nil {
			existing = f
		}
	default:
		// No cache (tests): the znode it would mirror.
		f, _, err := fs.GetFeatureZNode()
		switch {
		case err == nil && f.Status == zkmeta.FeatureStatusEnabled:
			existing = f.Features
		case err != nil && !errors.Is(err, zkmeta.ErrNoNode):
			readErr = err
		}
	}

	target := make(map[string]int16, len(existing))
	for n, v := range existing {
		target[n] = v
	}
	results := map[string]featureError{}
	var order []string
	for _, u := range featureUpdates(req) {
		if _, dup := results[u.feature]; !dup {
			order = append(order, u.feature)
		}
		cur, exists := existing[u.feature]
		level, del, ferr := validateFeatureUpdate(u, cur, exists)
		if ferr != nil {
			results[u.feature] = *ferr
			continue
		}
		if del {
			delete(target, u.feature)
		} else {
			target[u.feature] = level
		}
		results[u.feature] = featureError{0, &noneMessage}
	}
	for _, n := range order {
		r := kmsg.NewUpdateFeaturesResponseResult()
		r.Feature, r.ErrorCode, r.ErrorMessage = n, results[n].code, results[n].msg
		resp.Results = append(resp.Results, r)
	}

	changed := len(target) != len(existing)
	for n, v := range target {
		if ev, ok := existing[n]; !ok || ev != v {
			changed = true
		}
	}
	if !changed {
		return resp
	}
	epoch, err := int32(-1), readErr
	if err == nil {
		err = l.checkSession()
	}
	if err == nil {
		_, version, verr := zkmeta.FeatureVersioning(l.cfg.InterBrokerProtocolVersion)
		if verr != nil {
			version = zkmeta.FeatureZNodeV2
		}
		node := zkmeta.FeatureZNode{Version: version, Status: zkmeta.FeatureStatusEnabled, Features: target}
		l.log.WithField("node", node.String()).Info("updating FeatureZNode")
		epoch, err = fs.UpdateFeatureZNode(node)
	}
	if err == nil && l.cfg.Features != nil {
		ctx, cancel := context.WithTimeout(l.watchCtx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
		err = l.cfg.Features.WaitForEpoch(ctx, int64(epoch))
		cancel()
	}
	if err != nil {
		l.log.WithError(err).Warn("processing of feature updates failed")
		featureUpdateFailed(resp)
	}
	return resp
}
