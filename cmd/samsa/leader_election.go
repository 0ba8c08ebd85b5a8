package main

// leader-election mirrors Kafka 3.7's kafka-leader-election.sh (kafka.admin.LeaderElectionCommand)
// over ElectLeaders (43): --election-type preferred|unclean for --all-topic-partitions,
// --topic T --partition P, or --path-to-json-file {"partitions":[{"topic":..,"partition":..}]}.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type leaderElectionOpts struct {
	bootstrap, electionType, topic, jsonFile, commandConfig optString
	partition                                               optInt
	all                                                     bool
}

func parseLeaderElectionArgs(args []string, stderr io.Writer) (*leaderElectionOpts, *flag.FlagSet, error) {
	o := &leaderElectionOpts{}
	fs := newFlagSet("samsa leader-election", stderr)
	fs.Var(&o.bootstrap, "bootstrap-server", "A hostname and port for the broker to connect to, in the form host:port. Multiple comma separated URLs can be given. REQUIRED.")
	fs.Var(&o.commandConfig, "admin.config", "Configuration properties files to pass to the admin client.")
	fs.Var(&o.electionType, "election-type", "Type of election to attempt. Possible values are \"preferred\" for preferred leader election or \"unclean\" for unclean leader election.")
	fs.Var(&o.topic, "topic", "Name of topic for which to perform an election. Not allowed if --path-to-json-file or --all-topic-partitions is specified.")
	fs.Var(&o.partition, "partition", "Partition id for which to perform an election. REQUIRED if --topic is specified.")
	fs.Var(&o.jsonFile, "path-to-json-file", "The JSON file with the list of partition for which leader elections should be performed.")
	fs.BoolVar(&o.all, "all-topic-partitions", false, "Perform election on all of the eligible topic partitions based on the type of election.")
	if len(args) == 0 {
		return nil, fs, usageErr("This tool attempts to elect a new leader for a set of topic partitions.")
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if !o.bootstrap.set {
		return nil, fs, usageErr("Missing required option(s) [bootstrap-server]")
	}
	switch strings.ToLower(o.electionType.v) {
	case "preferred", "unclean":
	case "":
		return nil, fs, usageErr("Missing required option(s) [election-type]")
	default:
		return nil, fs, usageErr("Cannot convert %s to ElectionType", o.electionType.v)
	}
	if countSet(o.topic.set, o.jsonFile.set, o.all) != 1 {
		return nil, fs, usageErr("One and only one of the following options is required: all-topic-partitions, topic, path-to-json-file")
	}
	if o.topic.set && !o.partition.set {
		return nil, fs, usageErr("Missing required option(s) [partition]")
	}
	if !o.topic.set && o.partition.set {
		return nil, fs, usageErr("Option partition is only allowed if topic is used")
	}
	return o, fs, nil
}

func runLeaderElection(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseLeaderElectionArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	sec, ok := adminClientSecurity("leader-election", "admin.config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap.v, "leader-election", 60*time.Second, sec, func(ctx context.Context, cl *kgo.Client) error {
		return leaderElection(ctx, cl, o, stdout)
	})
	if err != nil {
		fmt.Fprintln(stderr, "Error: "+err.Error())
		return 1
	}
	return 0
}

func leaderElection(ctx context.Context, cl *kgo.Client, o *leaderElectionOpts, stdout io.Writer) error {
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = 30000
	typ := "PREFERRED"
	if strings.EqualFold(o.electionType.v, "unclean") {
		req.ElectionType, typ = 1, "UNCLEAN"
	}
	add := func(topic string, p int32) {
		for i := range req.Topics {
			if req.Topics[i].Topic == topic {
				req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
				return
			}
		}
		t := kmsg.NewElectLeadersRequestTopic()
		t.Topic, t.Partitions = topic, []int32{p}
		req.Topics = append(req.Topics, t)
	}
	switch {
	case o.all:
		req.Topics = nil // every partition
	case o.topic.set:
		add(o.topic.v, int32(o.partition.v))
	default:
		data, err := os.ReadFile(o.jsonFile.v)
		if err != nil {
			return err
		}
		var j struct {
			Partitions []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal(data, &j); err != nil {
			return fmt.Errorf("Unable to parse the JSON file: %v", err)
		}
		seen := map[string]bool{}
		for _, p := range j.Partitions {
			n := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
			if seen[n] {
				return fmt.Errorf("Replica election data contains duplicate partitions: %s", n)
			}
			seen[n] = true
			add(p.Topic, p.Partition)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kafkaErr(resp.ErrorCode, nil); err != nil {
		return err
	}
	var ok, noop []string
	failed := map[string]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			switch {
			case p.ErrorCode == 0:
				ok = append(ok, n)
			case p.ErrorCode == kerr.ElectionNotNeeded.Code:
				noop = append(noop, n)
			default:
				failed[n] = kafkaErr(p.ErrorCode, p.ErrorMessage)
			}
		}
	}
	sort.Strings(ok)
	sort.Strings(noop)
	if len(ok) > 0 {
		fmt.Fprintf(stdout, "Successfully completed leader election (%s) for partitions %s\n", typ, strings.Join(ok, ", "))
	}
	if len(noop) > 0 {
		fmt.Fprintf(stdout, "Valid replica already elected for partitions %s\n", strings.Join(noop, ", "))
	}
	if len(failed) > 0 {
		fmt.Fprintf(stdout, "Error completing leader election (%s) for partitions %s\n", typ, strings.Join(sortedKeysStr(failed), ", "))
		for _, n := range sortedKeysStr(failed) {
			fmt.Fprintf(stdout, "Error completing leader election (%s) for partition: %s: %v\n", typ, n, failed[n])
		}
		return fmt.Errorf("%d replica(s) could not be elected", len(failed))
	}
	return nil
}
