package broker

// logger_levels.go mirrors kafka.utils.Log4jController and
// kafka.server.logger.RuntimeLoggerManager (KIP-412): the BROKER_LOGGER resource lists the
// broker's loggers with their levels (DescribeConfigs) and changes them at runtime
// (IncrementalAlterConfigs SET / DELETE). Levels are not stored anywhere: a restart starts
// again from samsa.log.level, as Kafka starts again from log4j.properties.
//
// samsa logs through logrus, one *logrus.Logger per broker, with a "component" field on
// every entry. Each component stands for the Kafka class whose logger Kafka would use
// (componentLoggers); those names, "root" and "kafka" (the parent Kafka's log4j.properties
// configures) are the loggers that exist. A logger without a level of its own inherits from
// its nearest existing dot-separated ancestor, else root, as log4j does. Filtering: logrus
// drops entries below the Logger's level before anything else runs, so that level is set to
// the most verbose level in the table, and a Formatter wrapper drops each entry below its
// component's effective level (the writer then gets an empty write).

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rootLoggerName is Log4jController.ROOT_LOGGER.
const rootLoggerName = "root"

// kafkaParentLogger is the "kafka" logger Kafka's log4j.properties defines; components samsa
// has not mapped inherit through it.
const kafkaParentLogger = "kafka"

// componentLoggers maps a samsa log component to the Kafka logger that logs the same things.
// A component missing here is treated as a child of the "kafka" logger; add it here when
// adding a component.
var componentLoggers = map[string]string{
	"config":                           "kafka.server.KafkaConfig",
	"kafka.server":                     "kafka.server.KafkaServer",
	"admin":                            "kafka.server.ZkAdminManager",
	"config.admin":                     "kafka.server.ConfigAdminManager",
	"config.change":                    "kafka.server.ZkConfigManager",
	"socket.server":                    "kafka.network.SocketServer",
	"alter.partition":                  "kafka.server.DefaultAlterPartitionManager",
	"replica.manager":                  "kafka.server.ReplicaManager",
	"replica.fetcher":                  "kafka.server.ReplicaFetcherManager",
	"replica.alter.log.dirs":           "kafka.server.ReplicaAlterLogDirsManager",
	"add.partitions.to.txn.manager":    "kafka.server.AddPartitionsToTxnManager",
	"state.change":                     "state.change.logger",
	"scram":                            "kafka.security.CredentialProvider",
	"producer-id-manager":              "kafka.coordinator.transaction.ZkProducerIdManager",
	"group.coordinator":                "kafka.coordinator.group.GroupCoordinator",
	"transaction.coordinator":          "kafka.coordinator.transaction.TransactionCoordinator",
	"transaction.state.manager":        "kafka.coordinator.transaction.TransactionStateManager",
	"transaction.marker.channel":       "kafka.coordinator.transaction.TransactionMarkerChannelManager",
	"log.manager":                      "kafka.log.LogManager",
	"log.cleaner":                      "kafka.log.LogCleaner",
	"controller":                       "kafka.controller.KafkaController",
	"zkmeta":                           "kafka.zk.KafkaZkClient",
	"kafka.authorizer":                 "kafka.authorizer.logger",
	"dynamic.config":                   "kafka.server.DynamicBrokerConfig",
	"kafka.server.DynamicBrokerConfig": "kafka.server.DynamicBrokerConfig",
	"quotas":                           "kafka.server.ClientQuotaManager",
	"controller.mutation.quota":        "kafka.server.ControllerMutationQuotaManager",
	"replication.quota":                "kafka.server.ReplicationQuotaManager",
	"feature.listener":                 "kafka.server.FinalizedFeatureChangeListener",
	"connection.quotas":                "kafka.network.ConnectionQuotas",
	"debug.listener":                   "samsa.debug.DebugListener", // samsa's own: no Kafka counterpart
}

// knownLoggers are the loggers that exist (Log4jController.loggerExists).
var knownLoggers = func() map[string]bool {
	m := map[string]bool{rootLoggerName: true, kafkaParentLogger: true}
	for _, l := range componentLoggers {
		m[l] = true
	}
	return m
}()

// validLogLevels are LogLevelConfig.VALID_LOG_LEVELS, sorted as RuntimeLoggerManager
// prints them.
var validLogLevels = map[string]logrus.Level{
	"DEBUG": logrus.DebugLevel, "ERROR": logrus.ErrorLevel, "FATAL": logrus.FatalLevel,
	"INFO": logrus.InfoLevel, "TRACE": logrus.TraceLevel, "WARN": logrus.WarnLevel,
}

const validLogLevelsString = "DEBUG, ERROR, FATAL, INFO, TRACE, WARN"

// log4jLevelName is how log4j prints a level; logrus' panic level (samsa.log.level=panic)
// logs next to nothing, closest to log4j's OFF.
func log4jLevelName(l logrus.Level) string {
	switch l {
	case logrus.PanicLevel:
		return "OFF"
	case logrus.FatalLevel:
		return "FATAL"
	case logrus.ErrorLevel:
		return "ERROR"
	case logrus.WarnLevel:
		return "WARN"
	case logrus.InfoLevel:
		return "INFO"
	case logrus.DebugLevel:
		return "DEBUG"
	}
	return "TRACE"
}

// loggerLevels is the per-logger level table of one logrus.Logger (Kafka: the process's
// log4j hierarchy).
type loggerLevels struct {
	logger *logrus.Logger

	mu   sync.Mutex              // serializes changes
	root logrus.Level            // guarded by mu
	own  map[string]logrus.Level // loggers with a level of their own; guarded by mu

	// eff is the effective level of every component ("" = no component: root) and of
	// unmapped ones (under unmappedKey), rebuilt on each change; read by the formatter.
	eff atomic.Pointer[map[string]logrus.Level]
}

const unmappedKey = "\x00unmapped"

// loggerLevelsMu serializes installing tables; a logger's table lives in its formatter, so
// it goes away with the logger.
var loggerLevelsMu sync.Mutex

// levelsOf returns the level table of l, creating it (root = l's level now) and installing
// the filtering formatter on first use.
func levelsOf(l *logrus.Logger) *loggerLevels {
	loggerLevelsMu.Lock()
	defer loggerLevelsMu.Unlock()
	// Only SetFormatter writes the field, and after start-up only here, under the lock.
	if f, ok := l.Formatter.(*levelFilterFormatter); ok {
		return f.levels
	}
	t := &loggerLevels{logger: l, root: l.GetLevel(), own: map[string]logrus.Level{}}
	t.rebuildLocked()
	l.SetFormatter(&levelFilterFormatter{inner: l.Formatter, levels: t})
	return t
}

// loggerLevels is the table of the logger this broker logs to.
func (a *APIs) loggerLevels() *loggerLevels {
	if a.Log != nil && a.Log.Logger != nil {
		return levelsOf(a.Log.Logger)
	}
	return levelsOf(logrus.StandardLogger())
}

// resolveLocked is Log4jController.resolveLevel: own level, else the nearest existing
// ancestor's, else root's.
func (t *loggerLevels) resolveLocked(name string) logrus.Level {
	if name == rootLoggerName {
		return t.root
	}
	for n := name; ; {
		if lv, ok := t.own[n]; ok {
			return lv
		}
		i := strings.LastIndexByte(n, '.')
		if i <= 0 {
			return t.root
		}
		n = n[:i]
	}
}

func (t *loggerLevels) rebuildLocked() {
	eff := make(map[string]logrus.Level, len(componentLoggers)+2)
	for c, name := range componentLoggers {
		eff[c] = t.resolveLocked(name)
	}
	eff[""] = t.root
	eff[unmappedKey] = t.resolveLocked(kafkaParentLogger + ".unmapped")
	t.eff.Store(&eff)
	// logrus filters on the Logger's level first: it must let through the most verbose
	// level any logger wants.
	most := t.root
	for _, lv := range t.own {
		if lv > most {
			most = lv
		}
	}
	t.logger.SetLevel(most)
}

// enabled reports whether an entry of component at level passes its logger's level.
func (t *loggerLevels) enabled(component string, level logrus.Level) bool {
	eff := *t.eff.Load()
	lv, ok := eff[component]
	if !ok {
		lv = eff[unmappedKey]
	}
	return level <= lv
}

// Loggers is Log4jController.loggers: every existing logger with its effective level.
func (t *loggerLevels) Loggers() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(knownLoggers))
	for name := range knownLoggers {
		out[name] = log4jLevelName(t.resolveLocked(name))
	}
	return out
}

// SetLevel is Log4jController.logLevel: false if the logger does not exist.
func (t *loggerLevels) SetLevel(name string, level logrus.Level) bool {
	if !knownLoggers[name] {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if name == rootLoggerName {
		t.root = level
	} else {
		t.own[name] = level
	}
	t.rebuildLocked()
	return true
}

// UnsetLevel is Log4jController.unsetLogLevel: the logger inherits again. Unsetting root
// is refused before this is reached (RuntimeLoggerManager), so root keeps its level here.
func (t *loggerLevels) UnsetLevel(name string) bool {
	if !knownLoggers[name] {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.own, name)
	t.rebuildLocked()
	return true
}

// levelFilterFormatter drops entries below their component's logger level and formats the
// rest with the broker's own formatter.
type levelFilterFormatter struct {
	inner  logrus.Formatter
	levels *loggerLevels
}

func (f *levelFilterFormatter) Format(e *logrus.Entry) ([]byte, error) {
	component, _ := e.Data["component"].(string)
	if !f.levels.enabled(component, e.Level) {
		return nil, nil
	}
	return f.inner.Format(e)
}

// brokerLoggerEntries is ConfigHelper's BROKER_LOGGER answer: every logger, source
// DYNAMIC_BROKER_LOGGER_CONFIG, never read-only or sensitive, no synonyms.
func (a *APIs) brokerLoggerEntries() []configEntry {
	loggers := a.loggerLevels().Loggers()
	names := make([]string, 0, len(loggers))
	for n := range loggers {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]configEntry, 0, len(names))
	for _, n := range names {
		out = append(out, configEntry{Name: n, Value: strp(loggers[n]), Source: sourceDynamicBrokerLoggerConfig})
	}
	return out
}

// alterBrokerLoggers applies IncrementalAlterConfigs on one BROKER_LOGGER resource as
// ConfigAdminManager.preprocess and RuntimeLoggerManager.applyChangesForResource do, in
// their order: duplicate keys, null values, ALTER_CONFIGS on the cluster, the resource name
// is this broker's id, every op valid (SET: existing logger and a valid level; DELETE:
// existing logger other than root; APPEND/SUBTRACT refused), then, unless validateOnly,
// every op applied. The caller (44_incremental_alter_configs.go) handles duplicate
// resources and must not authorize this resource itself.
func (a *APIs) alterBrokerLoggers(rc *RequestContext, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	seen := make(map[string]bool, len(res.Configs))
	for _, c := range res.Configs {
		if seen[c.Name] {
			return newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[c.Name] = true
	}
	var nulls []string
	for _, c := range res.Configs {
		if int8(c.Op) != opDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	if !a.authorizeCluster(rc, kmsg.ACLOperationAlterConfigs) {
		return newAPIError(kerr.ClusterAuthorizationFailed, "%s", kerr.ClusterAuthorizationFailed.Message)
	}
	id, err := strconv.ParseInt(res.ResourceName, 10, 32)
	if err != nil {
		return newAPIError(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", res.ResourceName)
	}
	if int32(id) != a.BrokerID {
		// Kafka 3.7 prints its own id on both sides here; the text is kept as clients see it.
		return newAPIError(kerr.InvalidRequest, "Unexpected node id. Expected %d, but received %d", a.BrokerID, a.BrokerID)
	}
	levels := make([]logrus.Level, len(res.Configs))
	for i, c := range res.Configs {
		switch int8(c.Op) {
		case opSet:
			if !knownLoggers[c.Name] {
				return newAPIError(kerr.InvalidConfig, "Logger %s does not exist!", c.Name)
			}
			lv, ok := validLogLevels[*c.Value]
			if !ok {
				return newAPIError(kerr.InvalidConfig, "Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s",
					c.Name, *c.Value, validLogLevelsString)
			}
			levels[i] = lv
		case opDelete:
			if !knownLoggers[c.Name] {
				return newAPIError(kerr.InvalidConfig, "Logger %s does not exist!", c.Name)
			}
			if c.Name == rootLoggerName {
				return newAPIError(kerr.InvalidRequest, "Removing the log level of the %s logger is not allowed", rootLoggerName)
			}
		case opAppend:
			return newAPIError(kerr.InvalidRequest, "APPEND operation is not allowed for the BROKER_LOGGER resource")
		case opSubtract:
			return newAPIError(kerr.InvalidRequest, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource")
		default:
			// Kafka fails here with a NullPointerException (unknown server error); the
			// message its switch meant to give is clearer.
			return newAPIError(kerr.InvalidRequest, "Unknown operation type %d is not allowed for the BROKER_LOGGER resource", c.Op)
		}
	}
	if validateOnly {
		return nil
	}
	t := a.loggerLevels()
	log := a.Log
	if log == nil {
		log = logrus.NewEntry(t.logger)
	}
	log = log.WithField("component", "config.admin")
	for i, c := range res.Configs {
		if int8(c.Op) == opSet {
			t.SetLevel(c.Name, levels[i])
			log.WithFields(logrus.Fields{"logger": c.Name, "level": *c.Value}).Warn("updated the log level")
		} else {
			t.UnsetLevel(c.Name)
			log.WithField("logger", c.Name).Warn("unset the log level")
		}
	}
	return nil
}
