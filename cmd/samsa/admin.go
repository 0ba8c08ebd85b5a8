package main

// What the admin tools (topics, configs, consumer-groups, leader-election,
// reassign-partitions, transactions, acls) share: the client they run with and counting the
// actions given, as Kafka's *Command classes check "exactly one action". The client property
// file they are given is read by adminClientSecurity (client_security.go).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// withAdminClient connects a client named clientID to the comma-separated servers with the
// security options sec (from adminClientSecurity), runs fn with it under timeout and closes
// the client.
func withAdminClient(servers, clientID string, timeout time.Duration, sec []kgo.Opt, fn func(ctx context.Context, cl *kgo.Client) error) error {
	opts := append([]kgo.Opt{kgo.SeedBrokers(splitServers(servers)...), kgo.ClientID(clientID)}, sec...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return fn(ctx, cl)
}

// countSet counts the options given.
func countSet(given ...bool) int {
	n := 0
	for _, g := range given {
		if g {
			n++
		}
	}
	return n
}
