package broker

// config_handler.go mirrors kafka.server.ZkConfigManager with its
// ZkNodeChangeNotificationListener on /config/changes and the TopicConfigHandler: every broker
// watches the notification queue, handles each config_change_<seq> newer than the last one it
// processed, re-reads the entity's config from /config/<type>/<name> (the notification is only
// a trigger) and applies a topic's new overrides to the live logs of that topic
// (Log.SetConfig: retention, segment size, cleanup policy, min ISR... take effect from the
// next append, roll or retention pass, without a restart); a log a LeaderAndIsr is creating
// meanwhile re-reads the config when created (LogManager.topicConfigUpdated). Notifications
// older than 15 minutes are deleted on each pass (changeExpirationMs), as every broker does
// in Kafka.
// A user's change re-reads its SCRAM credentials into the broker's credential cache
// (UserConfigHandler → CredentialProvider.updateCredentials, scram_credentials.go) and, like
// clients/<c> and users/<u>/clients/<c>, tells the client quota managers
// (QuotaConfigHandler); ips/<ip> goes to the connection quotas (IpConfigHandler);
// brokers/<default> and brokers/<id> re-read and apply the dynamic broker configs
// (BrokerConfigHandler → DynamicBrokerConfig, dynamic_config.go).

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// configChangeExpiration is ZkConfigManager's changeExpirationMs (15 minutes).
const configChangeExpiration = 15 * time.Minute

// configChangeListener owns the notification sequence it has processed. Used by one
// goroutine only (run), so it needs no lock.
type configChangeListener struct {
	zk   *zkmeta.Client
	logs func() []*logstore.Log
	// topicConfigUpdated (LogManager.topicConfigUpdated) flags the topic's logs being
	// created, whose config may have been read before the change.
	topicConfigUpdated func(topic string)
	// topicChanged tells this broker's controller (a no-op unless active), for
	// unclean.leader.election.enable (KafkaController.enableTopicUncleanLeaderElection).
	topicChanged func(topic string)
	// brokerProps are the broker's current properties (topic defaults), read on each change.
	brokerProps func() map[string]string
	// brokerConfigChanged applies a brokers/<entity> notification; nil ignores them.
	brokerConfigChanged func(entity string) error
	// quotaChanged tells the client quota managers of a clients/ or users/ entity change
	// (the name as notified: sanitized, possibly <user>/clients/<client>); nil ignores them.
	quotaChanged func(entityType, entityName string)
	// ipChanged tells the connection quotas of an ips/<ip> change; nil ignores them.
	ipChanged func(ip string) error
	// credentials is the SCRAM credential cache users/<user> changes update; nil ignores them.
	credentials *scramCredentialCache
	log         *logrus.Entry
	now         func() time.Time
	// lastExecuted is the sequence number of the last processed notification; -1 at start,
	// so a (re)started broker re-applies every notification still present.
	lastExecuted int64
}

// startConfigChangeListener starts the listener under the broker's run context and wait group.
func (b *Broker) startConfigChangeListener() {
	l := &configChangeListener{
		zk:                 b.zk,
		logs:               b.logs.AllLogs,
		topicConfigUpdated: b.logs.TopicConfigUpdated,
		topicChanged:       b.ctrl.TopicConfigChanged,
		brokerProps:        b.currentProps,
		brokerConfigChanged: func(entity string) error {
			return b.dynConfig.HandleConfigChange(b.zk, entity)
		},
		quotaChanged: b.quotaConfigChanged,
		ipChanged:    b.ipConfigChanged,
		credentials:  b.scram,
		log:          b.log.WithField("component", "config.change"),
		now:          time.Now,
		lastExecuted: -1,
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		l.run(b.runCtx)
	}()
}

// run re-arms the children watch after every pass until ctx is done. A lost watch (session
// expiry, disconnect) just leads to the next pass, which catches up by sequence number.
func (l *configChangeListener) run(ctx context.Context) {
	for ctx.Err() == nil {
		children, ch, err := l.zk.ChildrenW(zkmeta.ConfigChangesPath)
		if err != nil {
			if errors.Is(err, zkmeta.ErrNoNode) {
				if cerr := l.zk.CreateRecursive(zkmeta.ConfigChangesPath, nil); cerr == nil || errors.Is(cerr, zkmeta.ErrNodeExists) {
					continue
				}
			}
			if ctx.Err() == nil && !errors.Is(err, zkmeta.ErrClosed) {
				l.log.WithError(err).Warn("could not watch config change notifications; retrying")
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		l.processNotifications(children)
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// notificationSeq parses the sequence suffix of config_change_<seq>; ok=false for foreign names.
func notificationSeq(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, zkmeta.ConfigChangePrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// processNotifications is ZkNodeChangeNotificationListener.processNotifications followed by
// purgeObsoleteNotifications.
func (l *configChangeListener) processNotifications(children []string) {
	type note struct {
		name string
		seq  int64
	}
	notes := make([]note, 0, len(children))
	for _, c := range children {
		if seq, ok := notificationSeq(c); ok {
			notes = append(notes, note{c, seq})
		}
	}
	sort.Slice(notes, func(i, j int) bool { return notes[i].seq < notes[j].seq })
	now := l.now()
	for _, n := range notes {
		path := zkmeta.ConfigChangesPath + "/" + n.name
		if n.seq > l.lastExecuted {
			data, _, err := l.zk.Get(path)
			switch {
			case errors.Is(err, zkmeta.ErrNoNode):
				// purged by another broker meanwhile
			case err != nil:
				l.log.WithError(err).WithField("zk_path", path).Warn("could not read config change notification")
				return // retried on the next pass from the same sequence
			default:
				l.processNotification(path, data)
			}
			l.lastExecuted = n.seq
		}
		// Purge old notifications (any broker may; NoNode means another one did).
		if _, st, err := l.zk.Exists(path); err == nil && st.Ctime > 0 && now.Sub(time.UnixMilli(st.Ctime)) > configChangeExpiration {
			if err := l.zk.Delete(path, -1); err != nil && !errors.Is(err, zkmeta.ErrNoNode) {
				l.log.WithError(err).WithField("zk_path", path).Debug("could not purge config change notification")
			}
		}
	}
}

// processNotification is ConfigChangedNotificationHandler.processNotification.
func (l *configChangeListener) processNotification(path string, data []byte) {
	entityType, name, err := zkmeta.DecodeConfigChange(data)
	if err != nil {
		l.log.WithError(err).WithField("zk_path", path).Warn("ignoring malformed config change notification")
		return
	}
	log := l.log.WithFields(logrus.Fields{"entity_type": entityType, "entity_name": name})
	switch entityType {
	case zkmeta.ConfigTypeTopic:
		overrides, err := l.zk.GetTopicConfig(name)
		if err != nil {
			log.WithError(err).Warn("could not read topic config after change notification")
			return
		}
		l.applyTopicConfig(name, overrides)
		if v, ok := overrides["unclean.leader.election.enable"]; ok && strings.EqualFold(strings.TrimSpace(v), "true") && l.topicChanged != nil {
			l.topicChanged(name)
		}
	case zkmeta.ConfigTypeUser:
		// UserConfigHandler: quotas for <user> and <user>/clients/<client>, credentials
		// for a plain <user> other than <default>.
		if parts := strings.Split(name, "/"); len(parts) != 1 && len(parts) != 3 {
			log.Warn("ignoring user config change with an invalid quota entity path")
			return
		}
		if l.quotaChanged != nil {
			l.quotaChanged(entityType, name)
		}
		if strings.Contains(name, "/") || name == zkmeta.ConfigEntityDefault {
			return
		}
		if l.credentials == nil {
			log.Debug("user config changed; no SCRAM credential cache on this broker")
			return
		}
		if err := l.credentials.userConfigChanged(name); err != nil {
			log.WithError(err).Warn("could not update SCRAM credentials after change notification")
			return
		}
		log.Info("updated SCRAM credentials")
	case zkmeta.ConfigTypeClient:
		if l.quotaChanged != nil {
			l.quotaChanged(entityType, name)
		}
	case zkmeta.ConfigTypeIP:
		if l.ipChanged != nil {
			if err := l.ipChanged(name); err != nil {
				log.WithError(err).Warn("could not apply ip quota change")
			}
		}
	case zkmeta.ConfigTypeBroker:
		if l.brokerConfigChanged == nil {
			log.Debug("broker config changed; no dynamic broker config on this broker")
			return
		}
		if err := l.brokerConfigChanged(name); err != nil {
			log.WithError(err).Warn("could not apply broker config change")
		}
	default:
		log.Info("config change for an entity type samsa does not apply dynamically; ignored")
	}
}

// applyTopicConfig is TopicConfigHandler.processConfigChanges → LogManager.updateTopicConfig:
// rebuild the LogConfig from the broker props and the new overrides and swap it into every
// local log of the topic. Logs being created are flagged first (they re-read the config when
// done), so a log that is not yet listed here still ends up with the new config.
func (l *configChangeListener) applyTopicConfig(topic string, overrides map[string]string) {
	if l.topicConfigUpdated != nil {
		l.topicConfigUpdated(topic)
	}
	var logs []*logstore.Log
	for _, lg := range l.logs() {
		if lg.TopicPartition().Topic == topic {
			logs = append(logs, lg)
		}
	}
	log := l.log.WithField("topic", topic)
	if len(logs) == 0 {
		log.Debug("topic config changed; no local logs")
		return
	}
	var props map[string]string
	if l.brokerProps != nil {
		props = l.brokerProps()
	}
	cfg, err := logstore.NewLogConfig(props, overrides)
	if err != nil {
		log.WithError(err).Warn("invalid topic config in zookeeper; logs keep their current config")
		return
	}
	for _, lg := range logs {
		lg.SetConfig(cfg)
	}
	log.WithFields(logrus.Fields{"logs": len(logs), "overrides": len(overrides)}).Info("applied topic config change")
}

// currentProps are the broker's properties in force (dynamic updates included).
func (b *Broker) currentProps() map[string]string {
	if b.dynConfig != nil {
		return b.dynConfig.Current().Props
	}
	return b.cfg.Props
}

// quotaEntityListener is what the client quota managers expose for notifications
// ((*QuotaManagers).EntityConfigChanged, QuotaConfigHandler).
type quotaEntityListener interface {
	EntityConfigChanged(entityType, entityName string)
}

// The quota components must keep the hooks' signatures.
var (
	_ quotaEntityListener                           = (*QuotaManagers)(nil)
	_ interface{ IPConfigChanged(ip string) error } = (*ConnectionQuotas)(nil)
)

// quotaConfigChanged hands a clients/ or users/ change to the client quota managers, if any.
func (b *Broker) quotaConfigChanged(entityType, entityName string) {
	if b.apis == nil || b.apis.Quotas == nil {
		return
	}
	if q, ok := any(b.apis.Quotas).(quotaEntityListener); ok {
		q.EntityConfigChanged(entityType, entityName)
	}
}

// ipConfigChanged hands an ips/<ip> change to the connection quotas, if any.
func (b *Broker) ipConfigChanged(ip string) error {
	if b.ipQuotas == nil {
		return nil
	}
	return b.ipQuotas.IPConfigChanged(ip)
}
