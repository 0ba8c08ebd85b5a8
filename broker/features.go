package broker

// features.go — the broker's finalized features (KIP-584) in ZooKeeper mode: FeatureCache
// is the feature part of Kafka's ZkMetadataCache (updateFeaturesOrThrow, clearFeatures,
// waitUntilFeatureEpochOrThrow) and featureChangeListener is FinalizedFeatureChangeListener,
// which keeps the cache equal to the /feature znode through a ZooKeeper watch. The feature
// epoch is the znode's version. ApiVersions v3 reports the cache (api_versions.go); the
// controller on this broker waits for it after writing /feature (controller.Config.Features,
// set in broker.go). A ZooKeeper-mode broker supports no
// feature, so a finalized feature in /feature is incompatible: as Kafka, the broker then
// fails (at start-up, or when the znode changes).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/controller"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// errFeatureCacheUpdate is Kafka's FeatureCacheUpdateException: fatal for the broker.
var errFeatureCacheUpdate = errors.New("feature cache update failed")

// FeatureCache holds the finalized features and their epoch. The zero value (and a nil
// cache) has none: epoch -1, as Kafka's ApiVersionsResponse.UNKNOWN_FINALIZED_FEATURES_EPOCH.
type FeatureCache struct {
	mu       sync.Mutex
	defined  bool
	features map[string]int16
	epoch    int64
	changed  chan struct{} // closed and replaced at every change
}

// Finalized returns a copy of the finalized features and the epoch (-1: none known).
func (c *FeatureCache) Finalized() (map[string]int16, int64) {
	if c == nil {
		return nil, -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.defined {
		return nil, -1
	}
	out := make(map[string]int16, len(c.features))
	for n, v := range c.features {
		out[n] = v
	}
	return out, c.epoch
}

// notifyLocked wakes the waiters; c.mu must be held.
func (c *FeatureCache) notifyLocked() {
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

// update is ZkMetadataCache.updateFeaturesOrThrow: the epoch may not go backwards and
// every feature must be supported; otherwise the cache is left as it was.
func (c *FeatureCache) update(features map[string]int16, epoch int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.defined && c.epoch > epoch {
		return fmt.Errorf("%w due to invalid epoch %d: the existing epoch is %d", errFeatureCacheUpdate, epoch, c.epoch)
	}
	var incompatible []string
	for n, v := range features {
		r, ok := controller.SupportedFeatures[n]
		switch {
		case !ok:
			incompatible = append(incompatible, fmt.Sprintf("{feature=%s, reason='Unsupported feature'}", n))
		case v < r.MinVersion || v > r.MaxVersion:
			incompatible = append(incompatible, fmt.Sprintf("{feature=%s, reason='%d is incompatible with {min_version:%d, max_version:%d}'}", n, v, r.MinVersion, r.MaxVersion))
		}
	}
	if len(incompatible) > 0 {
		sort.Strings(incompatible)
		return fmt.Errorf("%w since feature compatibility checks failed: %v", errFeatureCacheUpdate, incompatible)
	}
	c.defined, c.epoch = true, epoch
	c.features = make(map[string]int16, len(features))
	for n, v := range features {
		c.features[n] = v
	}
	c.notifyLocked()
	return nil
}

// clear is ZkMetadataCache.clearFeatures: no finalized features, epoch unknown.
func (c *FeatureCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.defined, c.features, c.epoch = false, nil, -1
	c.notifyLocked()
}

// WaitForEpoch is waitUntilFeatureEpochOrThrow: it returns once the cache holds an epoch >=
// epoch, or ctx's error.
func (c *FeatureCache) WaitForEpoch(ctx context.Context, epoch int64) error {
	if c == nil {
		return errors.New("no feature cache")
	}
	for {
		c.mu.Lock()
		if c.defined && c.epoch >= epoch {
			c.mu.Unlock()
			return nil
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			_, cur := c.Finalized()
			return fmt.Errorf("timed out waiting for feature epoch %d (current epoch: %d): %w", epoch, cur, ctx.Err())
		}
	}
}

// apiVersionsFeatures fills ApiVersions v3's feature fields (ApiVersionsResponse
// createApiVersionsResponseData): the supported ranges (none on a ZooKeeper-mode broker),
// the finalized levels as min = max = level, and the epoch.
func (c *FeatureCache) apiVersionsFeatures(resp *kmsg.ApiVersionsResponse) {
	names := make([]string, 0, len(controller.SupportedFeatures))
	for n := range controller.SupportedFeatures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k := kmsg.NewApiVersionsResponseSupportedFeature()
		k.Name, k.MinVersion, k.MaxVersion = n, controller.SupportedFeatures[n].MinVersion, controller.SupportedFeatures[n].MaxVersion
		resp.SupportedFeatures = append(resp.SupportedFeatures, k)
	}
	feats, epoch := c.Finalized()
	names = names[:0]
	for n := range feats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k := kmsg.NewApiVersionsResponseFinalizedFeature()
		k.Name, k.MinVersionLevel, k.MaxVersionLevel = n, feats[n], feats[n]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, k)
	}
	resp.FinalizedFeaturesEpoch = epoch
}

// featureChangeListener is FinalizedFeatureChangeListener: it re-reads /feature after every
// change of the znode and after every new ZooKeeper session.
type featureChangeListener struct {
	zk    *zkmeta.Client
	cache *FeatureCache
	log   *logrus.Entry
}

// updateLatest is FeatureCacheUpdater.updateLatestOrThrow. Only errFeatureCacheUpdate is
// fatal; a ZooKeeper error is returned for a retry.
func (l *featureChangeListener) updateLatest() error {
	f, version, err := l.zk.GetFeatureZNode()
	switch {
	case errors.Is(err, zkmeta.ErrNoNode):
		l.log.WithField("path", zkmeta.FeaturePath).Info("feature znode does not exist")
		l.cache.clear()
	case errors.Is(err, zkmeta.ErrBadJSON):
		l.log.WithError(err).WithField("path", zkmeta.FeaturePath).Error("unable to deserialize feature znode")
		l.cache.clear()
	case err != nil:
		return err
	case f.Status == zkmeta.FeatureStatusDisabled:
		l.log.WithField("path", zkmeta.FeaturePath).Info("feature znode is in disabled status")
		l.cache.clear()
	default:
		if err := l.cache.update(f.Features, int64(version)); err != nil {
			return err
		}
		l.log.WithFields(logrus.Fields{"features": f.Features, "epoch": version}).Info("updated finalized feature cache")
	}
	return nil
}

// run keeps the cache current until ctx ends. The first read's result goes to first.
// fatal is called (once) with an errFeatureCacheUpdate after the first read.
func (l *featureChangeListener) run(ctx context.Context, sessions <-chan zkmeta.SessionEvent, first chan<- error, fatal func(error)) {
	const retryBackoff = time.Second
	report := func(err error) {
		if first != nil {
			first <- err
			first = nil
		} else if err != nil {
			fatal(err)
		}
	}
	for ctx.Err() == nil {
		ch, err := l.zk.WatchFeatureZNode()
		if err == nil {
			err = l.updateLatest()
		}
		if errors.Is(err, errFeatureCacheUpdate) {
			report(err)
			return
		}
		if err != nil {
			if errors.Is(err, zkmeta.ErrClosed) {
				return
			}
			l.log.WithError(err).Warn("unexpected error in feature znode change processing; will continue")
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryBackoff):
			}
			continue
		}
		report(nil)
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-ch:
			if ok && ev.Type == zkmeta.EventNotWatching {
				// Session expired or client closed: wait for the next session.
				select {
				case <-ctx.Done():
					return
				case <-sessions:
				}
			}
		case <-sessions:
			// afterInitializingSession: re-read.
		}
	}
}

// startFeatureListener creates the feature cache and its listener (KafkaServer.startup:
// featureChangeListener.initOrThrow, only when inter.broker.protocol.version supports
// feature versioning), waiting up to zookeeper.connection.timeout.ms for the first read.
func (b *Broker) startFeatureListener(apis *APIs, cache *FeatureCache) error {
	apis.Features = cache
	enabled, _, err := zkmeta.FeatureVersioning(b.cfg.InterBrokerProtocolVersion)
	if err != nil {
		return fmt.Errorf("inter.broker.protocol.version: %w", err)
	}
	if !enabled {
		return nil
	}
	l := &featureChangeListener{zk: b.zk, cache: apis.Features, log: b.log.WithField("component", "feature.listener")}
	first := make(chan error, 1)
	sessions := b.zk.SessionEvents()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		l.run(b.runCtx, sessions, first, func(err error) { b.fail(fmt.Errorf("feature znode change: %w", err)) })
	}()
	timeout := b.cfg.ZookeeperConnectionTimeout
	if timeout <= 0 {
		timeout = 18 * time.Second
	}
	select {
	case err := <-first:
		if err != nil {
			return fmt.Errorf("feature cache: %w", err)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("feature cache: timed out after %v waiting for the first read of %s", timeout, zkmeta.FeaturePath)
	}
}
