package main

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
)

// brokerRunner is what `samsa broker` needs from broker.Broker.
type brokerRunner interface {
	Start(ctx context.Context) error
	Shutdown()
	Done() <-chan struct{} // closed when the broker fails on its own
	Err() error            // why Done was closed
}

// newBroker builds the broker; a seam so tests can run serveBroker with a fake.
var newBroker = func(cfg *config.Config, log *logrus.Entry) (brokerRunner, error) {
	b, err := broker.New(cfg, log)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return b, nil
}
