package broker

// statechange_log.go — the broker's state-change log (Kafka's state.change.logger, which
// log4j.properties sends to state-change.log): every entry logged with
// component=state.change by the controller (partition state changes, elections) and the
// ReplicaManager (LeaderAndIsr, StopReplica, ISR changes) is also written to
// samsa.state.change.log.file when set, and the last ones are kept for the /controller
// page's live tail (webview_controller.go). The entries honour the state.change.logger
// level (BROKER_LOGGER changes it at runtime), as both of Kafka's appenders do.

import (
	"strconv"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/statechange"
)

// stateChangeLog is the broker's state-change log (nil when neither the file nor the
// HTTP listener that shows its tail is on).
type stateChangeLog = statechange.Log

// startStateChangeLog opens samsa.state.change.log.file and hooks the log into the broker's
// logger. A file that cannot be opened fails start-up, naming the setting and the file.
func (b *Broker) startStateChangeLog() error {
	if b.cfg.StateChangeLogFile == "" && b.cfg.HTTPListener == "" {
		return nil
	}
	logger := b.log.Logger
	if logger == nil {
		logger = logrus.StandardLogger()
	}
	levels := levelsOf(logger)
	l, err := statechange.Open(statechange.Options{
		File:   b.cfg.StateChangeLogFile,
		JSON:   b.cfg.LogFormat == "json",
		Broker: strconv.Itoa(int(b.brokerID)),
		Enabled: func(lv logrus.Level) bool {
			return levels.enabled(statechange.Component, lv)
		},
	})
	if err != nil {
		return &startupConfigError{key: "samsa.state.change.log.file", err: err}
	}
	l.Attach(logger)
	b.stateChanges = l
	return nil
}

// stopStateChangeLog detaches the log and closes its file.
func (b *Broker) stopStateChangeLog() {
	if b.stateChanges != nil {
		if err := b.stateChanges.Close(); err != nil {
			b.log.WithError(err).Warn("cannot close the state-change log file")
		}
	}
}

// startupConfigError names the setting whose value stopped start-up.
type startupConfigError struct {
	key string
	err error
}

func (e *startupConfigError) Error() string { return "invalid " + e.key + ": " + e.err.Error() }
func (e *startupConfigError) Unwrap() error { return e.err }
