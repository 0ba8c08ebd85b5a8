package main

// What the admin tools (topics, configs, consumer-groups, leader-election,
// reassign-partitions, transactions) share: the client they run with, the checking of the
// client property file they are given, and counting the actions given, as Kafka's *Command
// classes check "exactly one action".

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// withAdminClient connects a client named clientID to the comma-separated servers, runs fn
// with it under timeout and closes the client.
func withAdminClient(servers, clientID string, timeout time.Duration, fn func(ctx context.Context, cl *kgo.Client) error) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(splitServers(servers)...), kgo.ClientID(clientID))
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

// adminClientProps reads the client property file an admin tool was given (--command-config,
// or --admin.config for leader-election) and sorts its keys: refused ones samsa's tools do
// not honour and that change security (security.protocol other than PLAINTEXT, any sasl.* or
// ssl.* key), and ignored ones (everything else). A missing or unreadable file is an error, as
// Kafka's Utils.loadProps throws. security.protocol=PLAINTEXT is what samsa's tools do anyway,
// so it is neither.
func adminClientProps(path string) (refused, ignored []string, err error) {
	props, err := loadPropsFile(path)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range props {
		switch {
		case k == "security.protocol":
			// Kafka trims a String config and upper-cases it in SecurityProtocol.forName.
			if p := strings.ToUpper(strings.TrimSpace(v)); p != "PLAINTEXT" {
				refused = append(refused, k+"="+strings.TrimSpace(v))
			}
		case strings.HasPrefix(k, "sasl.") || strings.HasPrefix(k, "ssl."):
			refused = append(refused, k) // no value: these may hold passwords
		default:
			ignored = append(ignored, k)
		}
	}
	sort.Slice(refused, func(i, j int) bool { // security.protocol first, then by name
		pi, pj := strings.HasPrefix(refused[i], "security.protocol="), strings.HasPrefix(refused[j], "security.protocol=")
		if pi != pj {
			return pi
		}
		return refused[i] < refused[j]
	})
	sort.Strings(ignored)
	return refused, ignored, nil
}

// checkAdminClientProps applies adminClientProps for tool ("topics", ...) when the option
// flagName ("command-config" or "admin.config") was given: it prints the error and returns
// false (the tool exits 1 before connecting) for an unreadable file or a refused key, and
// prints one warning line listing the ignored keys.
func checkAdminClientProps(tool, flagName string, file optString, stderr io.Writer) bool {
	if !file.set {
		return true
	}
	refused, ignored, err := adminClientProps(file.v)
	if err != nil {
		fmt.Fprintf(stderr, "samsa %s: --%s: %v\n", tool, flagName, err)
		return false
	}
	if len(refused) > 0 {
		fmt.Fprintf(stderr, "samsa %s: --%s sets %s, which samsa's tools do not support yet\n", tool, flagName, strings.Join(refused, ", "))
		return false
	}
	if len(ignored) > 0 {
		fmt.Fprintf(stderr, "samsa %s: ignoring --%s keys: %s\n", tool, flagName, strings.Join(ignored, ", "))
	}
	return true
}
