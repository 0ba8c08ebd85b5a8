// Command samsa is the samsa broker and its tools, mirroring Kafka's shell scripts:
//
//	samsa broker --config <file> [--override key=value]...   kafka-server-start.sh
//	samsa topics ...                                         kafka-topics.sh
//	samsa console-producer ...                               kafka-console-producer.sh
//	samsa console-consumer ...                               kafka-console-consumer.sh
//	samsa dump-log ...                                       kafka-dump-log.sh
//	samsa producer-perf-test ...                             kafka-producer-perf-test.sh
//	samsa consumer-perf-test ...                             kafka-consumer-perf-test.sh
//	samsa configs ...                                        kafka-configs.sh
//	samsa reassign-partitions ...                            kafka-reassign-partitions.sh
//	samsa leader-election ...                                kafka-leader-election.sh
//	samsa consumer-groups ...                                kafka-consumer-groups.sh
//	samsa transactions ...                                   kafka-transactions.sh
//	samsa acls ...                                           kafka-acls.sh
//	samsa zookeeper-security-migration ...                   zookeeper-security-migration.sh
//	samsa features ...                                       kafka-features.sh
//	samsa delete-records ...                                 kafka-delete-records.sh
//	samsa log-dirs ...                                       kafka-log-dirs.sh
//	samsa get-offsets ...                                    kafka-get-offsets.sh
//	samsa broker-api-versions ...                            kafka-broker-api-versions.sh
//	samsa cluster ...                                        kafka-cluster.sh
//	samsa zookeeper-shell ...                                zookeeper-shell.sh
//	samsa replica-verification ...                           kafka-replica-verification.sh
//	samsa verifiable-producer ...                            kafka-verifiable-producer.sh
//	samsa verifiable-consumer ...                            kafka-verifiable-consumer.sh
//	samsa e2e-latency ...                                    kafka-e2e-latency.sh
//	samsa chaos ...                                          (samsa's own) a checked workload under faults
//
// Each subcommand lives in its own file (the later ones register themselves in an init
// function) and takes Kafka's flags (single or double dash,
// `--flag value` or `--flag=value`).
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command runs one subcommand with its arguments and returns the process exit code.
type command struct {
	run  func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
	help string
}

var commands = map[string]command{
	"broker":              {runBroker, "run a broker (kafka-server-start.sh)"},
	"topics":              {runTopics, "create, delete, describe, or change a topic (kafka-topics.sh)"},
	"console-producer":    {runConsoleProducer, "read lines from standard input and publish them (kafka-console-producer.sh)"},
	"console-consumer":    {runConsoleConsumer, "read a topic and write it to standard output (kafka-console-consumer.sh)"},
	"dump-log":            {runDumpLog, "print log segments and indexes (kafka-dump-log.sh)"},
	"producer-perf-test":  {runProducerPerfTest, "measure producer throughput and latency (kafka-producer-perf-test.sh)"},
	"consumer-perf-test":  {runConsumerPerfTest, "measure consumer throughput (kafka-consumer-perf-test.sh)"},
	"configs":             {runConfigs, "add, delete or describe topic and broker configs (kafka-configs.sh)"},
	"reassign-partitions": {runReassignPartitions, "move partitions between brokers (kafka-reassign-partitions.sh)"},
	"leader-election":     {runLeaderElection, "elect preferred or unclean leaders (kafka-leader-election.sh)"},
	"consumer-groups":     {runConsumerGroups, "list, describe, delete consumer groups and reset their offsets (kafka-consumer-groups.sh)"},
	"transactions":        {runTransactions, "list, describe and abort transactions, find hanging ones (kafka-transactions.sh)"},
	"acls":                {runAcls, "add, remove and list ACLs (kafka-acls.sh)"},

	"zookeeper-security-migration": {runZkSecurityMigration, "set secure or open ACLs on Kafka's znodes (zookeeper-security-migration.sh)"},
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "samsa: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: samsa <command> [flags]")
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-19s %s\n", n, commands[n].help)
	}
}
