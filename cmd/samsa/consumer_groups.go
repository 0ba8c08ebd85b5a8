package main

// consumer-groups mirrors Kafka 3.7's kafka-consumer-groups.sh (kafka.admin.ConsumerGroupCommand)
// over franz-go's kadm: --list [--state], --describe --group G [--offsets|--members [--verbose]|--state],
// --delete --group G, --delete-offsets, and --reset-offsets (consumer_groups_reset.go), with
// Kafka's columns.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type groupsOpts struct {
	bootstrap                                              string
	list, describe, del, deleteOffsets, resetOffsets       bool
	groups, topics                                         multiFlag
	allGroups, allTopics, members, verbose, state, offsets bool
	execute, dryRun, toEarliest, toLatest, toCurrent       bool
	toOffset, shiftBy                                      optInt
	toDatetime, byDuration, fromFile                       optString
	export                                                 bool
	timeout                                                time.Duration
	commandConfig                                          optString
}

func parseGroupsArgs(args []string, stderr io.Writer) (*groupsOpts, error) {
	o := &groupsOpts{timeout: 30 * time.Second}
	fs := newFlagSet("samsa consumer-groups", stderr)
	var bootstrap, commandConfig optString
	var timeoutMs optInt
	fs.Var(&bootstrap, "bootstrap-server", "REQUIRED: The server(s) to connect to.")
	fs.Var(&commandConfig, "command-config", "Property file containing configs to be passed to Admin Client.")
	fs.BoolVar(&o.list, "list", false, "List all consumer groups.")
	fs.BoolVar(&o.describe, "describe", false, "Describe consumer group and list offset lag (number of messages not yet processed) related to given group.")
	fs.BoolVar(&o.del, "delete", false, "Pass in groups to delete topic partition offsets and ownership information over the entire consumer group.")
	fs.BoolVar(&o.deleteOffsets, "delete-offsets", false, "Delete offsets of consumer group. Supports one consumer group at the time, and multiple topics.")
	fs.BoolVar(&o.resetOffsets, "reset-offsets", false, "Reset offsets of consumer group. Supports one consumer group at the time, and instances should be inactive.")
	fs.Var(&o.groups, "group", "The consumer group we wish to act on.")
	fs.Var(&o.topics, "topic", "The topic whose consumer group information should be deleted or topic whose should be included in the reset offset process.")
	fs.BoolVar(&o.allGroups, "all-groups", false, "Apply to all consumer groups.")
	fs.BoolVar(&o.allTopics, "all-topics", false, "Consider all topics assigned to a group in the `reset-offsets` process.")
	fs.BoolVar(&o.members, "members", false, "Describe members of the group.")
	fs.BoolVar(&o.verbose, "verbose", false, "Provide additional information, if any, when describing the group.")
	fs.BoolVar(&o.state, "state", false, "When specified with '--describe', includes the state of the group. When specified with '--list', it displays the state of all groups.")
	fs.BoolVar(&o.offsets, "offsets", false, "Describe the group and list all topic partitions in the group along with their offset lag (default).")
	fs.BoolVar(&o.execute, "execute", false, "Execute operation. Supported operations: reset-offsets.")
	fs.BoolVar(&o.dryRun, "dry-run", false, "Only show results without executing changes on Consumer Groups.")
	fs.BoolVar(&o.toEarliest, "to-earliest", false, "Reset offsets to earliest offset.")
	fs.BoolVar(&o.toLatest, "to-latest", false, "Reset offsets to latest offset.")
	fs.BoolVar(&o.toCurrent, "to-current", false, "Reset offsets to current offset.")
	fs.Var(&o.toOffset, "to-offset", "Reset offsets to a specific offset.")
	fs.Var(&o.shiftBy, "shift-by", "Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.")
	fs.Var(&o.toDatetime, "to-datetime", "Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'")
	fs.Var(&o.byDuration, "by-duration", "Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'")
	fs.Var(&o.fromFile, "from-file", "Reset offsets to values defined in CSV file.")
	fs.BoolVar(&o.export, "export", false, "Export operation execution to a CSV file. Supported operations: reset-offsets.")
	fs.Var(&timeoutMs, "timeout", "The timeout that can be set for some use cases (ms).")
	if len(args) == 0 {
		return nil, usageErr("List all consumer groups, describe a consumer group, delete consumer group info, or reset consumer group offsets.")
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	o.bootstrap, o.commandConfig = bootstrap.v, commandConfig
	if timeoutMs.set {
		o.timeout = time.Duration(timeoutMs.v) * time.Millisecond
	}
	n := countSet(o.list, o.describe, o.del, o.deleteOffsets, o.resetOffsets)
	switch {
	case o.bootstrap == "":
		return nil, usageErr("Missing required argument \"[bootstrap-server]\"")
	case n != 1:
		return nil, usageErr("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets")
	case (o.describe || o.del || o.resetOffsets || o.deleteOffsets) && len(o.groups) == 0 && !o.allGroups:
		return nil, usageErr("Option [%s] takes one of these options: [all-groups], [group]", map[bool]string{true: "describe", false: "reset-offsets"}[o.describe])
	}
	if o.resetOffsets {
		if err := checkResetArgs(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func runConsumerGroups(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, err := parseGroupsArgs(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 1
	}
	if o.resetOffsets && !o.execute && !o.dryRun {
		fmt.Fprintln(stderr, resetNoExecuteWarning)
	}
	sec, ok := adminClientSecurity("consumer-groups", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap, "adminclient-1", o.timeout, sec, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		if o.allGroups {
			listed, err := adm.ListGroups(ctx)
			if err != nil {
				return err
			}
			o.groups = listed.Groups()
			sort.Strings(o.groups)
		}
		switch {
		case o.list:
			return groupsList(ctx, adm, o, stdout)
		case o.describe:
			return groupsDescribe(ctx, adm, o, stdout)
		case o.del:
			return groupsDelete(ctx, adm, o, stdout)
		case o.deleteOffsets:
			return groupsDeleteOffsets(ctx, adm, o, stdout)
		case o.resetOffsets:
			return groupsResetOffsets(ctx, cl, o, stdout, stderr)
		}
		return nil
	})
	if errors.Is(err, errUsage) { // Kafka's printUsageAndExit from inside a command
		fmt.Fprintln(stderr, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "Error: "+err.Error())
		return 1
	}
	return 0
}

func groupsList(ctx context.Context, adm *kadm.Client, o *groupsOpts, w io.Writer) error {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("executing consumer group command failed due to %w", err)
	}
	names := listed.Groups()
	sort.Strings(names)
	if !o.state {
		for _, n := range names {
			fmt.Fprintln(w, n)
		}
		return nil
	}
	width := len("GROUP")
	for _, n := range names {
		width = max(width, len(n))
	}
	fmt.Fprintf(w, "%-*s %s\n", width, "GROUP", "STATE")
	for _, n := range names {
		fmt.Fprintf(w, "%-*s %s\n", width, n, listed[n].State)
	}
	return nil
}

// orDash is Kafka's Option.getOrElse(MISSING_COLUMN_VALUE).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type partitionRow struct {
	group, topic               string
	partition                  int32
	current, end               int64 // -1: unknown
	consumerID, host, clientID string
}

func groupsDescribe(ctx context.Context, adm *kadm.Client, o *groupsOpts, w io.Writer) error {
	described, err := adm.DescribeGroups(ctx, o.groups...)
	if err != nil {
		return err
	}
	for _, g := range o.groups {
		d, ok := described[g]
		if !ok {
			continue
		}
		if d.Err != nil {
			return fmt.Errorf("executing consumer group command failed due to %w", d.Err)
		}
		switch {
		case o.state:
			describeState(w, d)
		case o.members:
			describeMembers(w, d, o.verbose)
		default:
			if err := describeOffsets(ctx, adm, w, d); err != nil {
				return err
			}
		}
	}
	return nil
}

func describeState(w io.Writer, d kadm.DescribedGroup) {
	if d.State == "Dead" {
		fmt.Fprintf(w, "Consumer group '%s' does not exist.\n", d.Group)
		return
	}
	coord := fmt.Sprintf("%s:%d  (%d)", d.Coordinator.Host, d.Coordinator.Port, d.Coordinator.NodeID)
	gw, cw, aw := max(len("GROUP"), len(d.Group)), max(len("COORDINATOR (ID)"), len(coord)), max(len("ASSIGNMENT-STRATEGY"), len(d.Protocol))
	fmt.Fprintf(w, "\n%-*s %-*s %-*s %-*s %s\n", gw, "GROUP", cw, "COORDINATOR (ID)", aw, "ASSIGNMENT-STRATEGY", 20, "STATE", "#MEMBERS")
	fmt.Fprintf(w, "%-*s %-*s %-*s %-*s %d\n", gw, d.Group, cw, coord, aw, d.Protocol, 20, d.State, len(d.Members))
}

func describeMembers(w io.Writer, d kadm.DescribedGroup, verbose bool) {
	if d.State == "Dead" {
		fmt.Fprintf(w, "Consumer group '%s' does not exist.\n", d.Group)
		return
	}
	if len(d.Members) == 0 {
		fmt.Fprintf(w, "\nConsumer group '%s' has no active members.\n", d.Group)
		return
	}
	gw, cw, hw, lw := len("GROUP"), len("CONSUMER-ID"), len("HOST"), len("CLIENT-ID")
	for _, m := range d.Members {
		gw, cw, hw, lw = max(gw, len(d.Group)), max(cw, len(m.MemberID)), max(hw, len(m.ClientHost)), max(lw, len(m.ClientID))
	}
	header := fmt.Sprintf("%-*s %-*s %-*s %-*s %-12s", gw, "GROUP", cw, "CONSUMER-ID", hw, "HOST", lw, "CLIENT-ID", "#PARTITIONS ")
	if verbose {
		header += " ASSIGNMENT"
	}
	fmt.Fprintln(w, "\n"+header)
	for _, m := range d.Members {
		var n int
		var parts []string
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				n += len(t.Partitions)
				var ps []string
				for _, p := range t.Partitions {
					ps = append(ps, strconv.Itoa(int(p)))
				}
				parts = append(parts, t.Topic+"("+strings.Join(ps, ",")+")")
			}
		}
		line := fmt.Sprintf("%-*s %-*s %-*s %-*s %-12d", gw, d.Group, cw, m.MemberID, hw, m.ClientHost, lw, m.ClientID, n)
		if verbose {
			line += " " + orDash(strings.Join(parts, ","))
		}
		fmt.Fprintln(w, line)
	}
}

func describeOffsets(ctx context.Context, adm *kadm.Client, w io.Writer, d kadm.DescribedGroup) error {
	if d.State == "Dead" {
		fmt.Fprintf(w, "Consumer group '%s' does not exist.\n", d.Group)
		return nil
	}
	committed, err := adm.FetchOffsets(ctx, d.Group)
	if err != nil {
		return err
	}
	if err := committed.Error(); err != nil {
		return err
	}
	rows := map[[2]string]*partitionRow{}
	key := func(t string, p int32) [2]string { return [2]string{t, strconv.Itoa(int(p))} }
	topicSet := map[string]bool{}
	for _, m := range d.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range a.Topics {
			topicSet[t.Topic] = true
			for _, p := range t.Partitions {
				rows[key(t.Topic, p)] = &partitionRow{group: d.Group, topic: t.Topic, partition: p, current: -1, end: -1,
					consumerID: m.MemberID, host: m.ClientHost, clientID: m.ClientID}
			}
		}
	}
	committed.Each(func(r kadm.OffsetResponse) {
		topicSet[r.Topic] = true
		row, ok := rows[key(r.Topic, r.Partition)]
		if !ok {
			row = &partitionRow{group: d.Group, topic: r.Topic, partition: r.Partition, end: -1}
			rows[key(r.Topic, r.Partition)] = row
		}
		row.current = r.At
	})
	var topics []string
	for t := range topicSet {
		topics = append(topics, t)
	}
	if len(topics) > 0 {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return err
		}
		ends.Each(func(lo kadm.ListedOffset) {
			if row, ok := rows[key(lo.Topic, lo.Partition)]; ok && lo.Err == nil {
				row.end = lo.Offset
			}
		})
	}
	list := make([]*partitionRow, 0, len(rows))
	for _, r := range rows {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].topic != list[j].topic {
			return list[i].topic < list[j].topic
		}
		return list[i].partition < list[j].partition
	})
	if len(d.Members) == 0 {
		fmt.Fprintf(w, "\nConsumer group '%s' has no active members.\n", d.Group)
	}
	gw, tw, cw, hw := len("GROUP"), len("TOPIC"), len("CONSUMER-ID"), len("HOST")
	for _, r := range list {
		gw, tw, cw, hw = max(gw, len(r.group)), max(tw, len(r.topic)), max(cw, len(orDash(r.consumerID))), max(hw, len(orDash(r.host)))
	}
	fmt.Fprintf(w, "\n%-*s %-*s %-10s %-15s %-15s %-15s %-*s %-*s %s\n", gw, "GROUP", tw, "TOPIC", "PARTITION",
		"CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", cw, "CONSUMER-ID", hw, "HOST", "CLIENT-ID")
	num := func(v int64) string {
		if v < 0 {
			return "-"
		}
		return strconv.FormatInt(v, 10)
	}
	for _, r := range list {
		lag := "-"
		if r.current >= 0 && r.end >= 0 {
			lag = strconv.FormatInt(r.end-r.current, 10)
		}
		fmt.Fprintf(w, "%-*s %-*s %-10d %-15s %-15s %-15s %-*s %-*s %s\n", gw, r.group, tw, r.topic, r.partition,
			num(r.current), num(r.end), lag, cw, orDash(r.consumerID), hw, orDash(r.host), orDash(r.clientID))
	}
	return nil
}

func groupsDelete(ctx context.Context, adm *kadm.Client, o *groupsOpts, w io.Writer) error {
	resp, err := adm.DeleteGroups(ctx, o.groups...)
	if err != nil {
		return err
	}
	var ok, failed []string
	for _, g := range o.groups {
		r, found := resp[g]
		if !found || r.Err == nil {
			ok = append(ok, g)
			continue
		}
		failed = append(failed, fmt.Sprintf("Error: Deletion of group '%s' failed due to: %v", g, r.Err))
	}
	if len(failed) == 0 {
		quoted := make([]string, len(ok))
		for i, g := range ok {
			quoted[i] = "'" + g + "'"
		}
		fmt.Fprintf(w, "Deletion of requested consumer groups (%s) was successful.\n", strings.Join(quoted, ", "))
		return nil
	}
	for _, f := range failed {
		fmt.Fprintln(w, f)
	}
	return errors.New("deletion of some consumer groups failed")
}

func groupsDeleteOffsets(ctx context.Context, adm *kadm.Client, o *groupsOpts, w io.Writer) error {
	if len(o.groups) != 1 {
		return errors.New("--delete-offsets supports one consumer group at a time")
	}
	g := o.groups[0]
	set := kadm.TopicsSet{}
	committed, err := adm.FetchOffsets(ctx, g)
	if err != nil {
		return err
	}
	for _, t := range o.topics {
		name, part, hasPart := strings.Cut(t, ":")
		if hasPart {
			for _, p := range strings.Split(part, ",") {
				n, err := strconv.Atoi(p)
				if err != nil {
					return fmt.Errorf("invalid partition %q", p)
				}
				set.Add(name, int32(n))
			}
			continue
		}
		for p := range committed[name] {
			set.Add(name, p)
		}
	}
	resp, err := adm.DeleteOffsets(ctx, g, set)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%-15s %-15s %s\n", "TOPIC", "PARTITION", "STATUS")
	for _, t := range set.Sorted() {
		for _, p := range t.Partitions {
			status := "Successful"
			if err := resp[t.Topic][p]; err != nil {
				status = "Error: " + err.Error()
			}
			fmt.Fprintf(w, "%-15s %-15d %s\n", t.Topic, p, status)
		}
	}
	return nil
}

// parseResetDatetime accepts Kafka's formats: yyyy-MM-ddTHH:mm:SS.sss with an optional zone.
func parseResetDatetime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05.000", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("error parsing timestamp %q: expected format yyyy-MM-ddTHH:mm:SS.sss", s)
}
