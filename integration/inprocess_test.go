package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
)

// In-process brokers: broker.New from the same properties a process would read, logging to t.Log.
func init() {
	startInProcess = func(t testing.TB, id int32, props map[string]string) (string, func(), error) {
		cfg, warnings, err := config.FromMap(props)
		if err != nil {
			return "", nil, fmt.Errorf("broker %d config: %w", id, err)
		}
		w := newTestLogWriter(t, fmt.Sprintf("broker %d: ", id))
		logger := logrus.New()
		logger.SetOutput(w)
		logger.SetFormatter(&logrus.TextFormatter{DisableColors: true, FullTimestamp: true, TimestampFormat: "15:04:05.000"})
		log := logrus.NewEntry(logger)
		for _, warning := range warnings {
			log.WithField("component", "config").Warn(warning)
		}
		b, err := broker.New(cfg, log)
		if err != nil {
			w.Close()
			return "", nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := b.Start(ctx); err != nil {
			w.Close()
			return "", nil, err
		}
		stop := func() {
			b.Shutdown()
			w.Close()
		}
		return b.Addr("PLAINTEXT"), stop, nil
	}
}
