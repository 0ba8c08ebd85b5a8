package main

// consumer-groups --reset-offsets, as Kafka 3.7's ConsumerGroupCommand.resetOffsets: for each
// inactive group (Empty or Dead) the partitions in scope (--all-topics: those with committed
// offsets; --topic t or t:p,q; none with --from-file) get new offsets by one scenario:
// --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime,
// --by-duration (PnDTnHnMnS before now) or --from-file (the CSV --export writes). Requested
// offsets outside the log are moved into it, with Kafka's warnings. A dry run unless
// --execute; the plan prints as Kafka's table, or with --export as CSV rows
// ("topic,partition,offset" for one --group, "group,topic,partition,offset" otherwise).

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// resetNoExecuteWarning is printed to stderr, word for word (the missing space included),
// when neither --execute nor --dry-run is given.
const resetNoExecuteWarning = "WARN: No action will be performed as the --execute option is missing.In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting."

// checkResetArgs is the --reset-offsets part of ConsumerGroupCommandOptions.checkArgs, plus
// the scenario and scope checks Kafka makes once connected, made here before connecting.
func checkResetArgs(o *groupsOpts) error {
	if o.dryRun && o.execute {
		return usageErr("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
	}
	if len(o.groups) == 0 && !o.allGroups {
		return usageErr("Option [reset-offsets] takes one of these options: [all-groups], [group]")
	}
	scenarios := []struct {
		name string
		set  bool
	}{
		{"to-offset", o.toOffset.set}, {"shift-by", o.shiftBy.set}, {"to-datetime", o.toDatetime.set},
		{"by-duration", o.byDuration.set}, {"to-earliest", o.toEarliest}, {"to-latest", o.toLatest},
		{"to-current", o.toCurrent}, {"from-file", o.fromFile.set},
	}
	var given []string
	for _, s := range scenarios {
		if s.set {
			given = append(given, s.name)
		}
	}
	switch {
	case len(given) > 1:
		return usageErr("Option \"[%s]\" can't be used with option \"[%s]\"", given[0], given[1])
	case len(given) == 0:
		return usageErr("Option '[reset-offsets]' requires one of the following scenarios: [to-offset], [shift-by], [to-datetime], [by-duration], [to-earliest], [to-latest], [to-current], [from-file]")
	case len(o.topics) == 0 && !o.allTopics && !o.fromFile.set:
		return usageErr("One of the reset scopes should be defined: --all-topics, --topic.")
	}
	if o.byDuration.set {
		if _, err := parseJavaDuration(o.byDuration.v); err != nil {
			return err
		}
	}
	return nil
}

// javaDurationRE is java.time.Duration.parse's pattern: PnDTnHnMn.nS, signs allowed on the
// whole and on each part, case-insensitive.
var javaDurationRE = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseJavaDuration is java.time.Duration.parse.
func parseJavaDuration(s string) (time.Duration, error) {
	m := javaDurationRE.FindStringSubmatch(s)
	bad := fmt.Errorf("Text cannot be parsed to a Duration")
	if m == nil || m[3] == "T" || (m[2] == "" && m[3] == "") {
		return 0, bad
	}
	part := func(v string, unit time.Duration) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(1<<63-1)/int64(unit) || n < -int64(1<<63-1)/int64(unit) {
			return 0, bad
		}
		return time.Duration(n) * unit, nil
	}
	var total time.Duration
	for i, unit := range map[int]time.Duration{2: 24 * time.Hour, 4: time.Hour, 5: time.Minute, 6: time.Second} {
		d, err := part(m[i], unit)
		if err != nil {
			return 0, err
		}
		total += d
	}
	if frac := m[7]; frac != "" {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[6], "-") {
			ns = -ns
		}
		total += time.Duration(ns)
	}
	if m[1] == "-" {
		total = -total
	}
	return total, nil
}

type resetTP struct {
	topic     string
	partition int32
}

func (p resetTP) String() string { return fmt.Sprintf("%s-%d", p.topic, p.partition) }

func sortResetTPs(ps []resetTP) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].topic != ps[j].topic {
			return ps[i].topic < ps[j].topic
		}
		return ps[i].partition < ps[j].partition
	})
}

// groupReset is one group's planned offsets; nil for a group that could not be reset.
type groupReset struct {
	group   string
	offsets map[resetTP]int64
}

// printGroupsError is ConsumerGroupCommand.printError: a blank line and "Error: ..." on stdout.
func printGroupsError(w io.Writer, msg string) {
	fmt.Fprintf(w, "\nError: %s\n", msg)
}

func groupsResetOffsets(ctx context.Context, cl *kgo.Client, o *groupsOpts, w, stderr io.Writer) error {
	adm := kadm.NewClient(cl)
	var plan map[string]map[resetTP]int64
	if o.fromFile.set {
		text, err := os.ReadFile(o.fromFile.v)
		if err != nil {
			return fmt.Errorf("executing consumer group command failed due to %w", err)
		}
		single := ""
		if len(o.groups) == 1 && !o.allGroups {
			single = o.groups[0]
		}
		if plan, err = parseResetPlan(string(text), single); err != nil {
			return fmt.Errorf("executing consumer group command failed due to %w", err)
		}
	}
	described, err := adm.DescribeGroups(ctx, o.groups...)
	if err != nil {
		return err
	}
	var results []groupReset
	for _, g := range o.groups {
		d := described[g]
		if d.Err != nil {
			return fmt.Errorf("executing consumer group command failed due to %w", d.Err)
		}
		if d.State != "Empty" && d.State != "Dead" {
			printGroupsError(w, fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", g, d.State))
			results = append(results, groupReset{g, map[resetTP]int64{}})
			continue
		}
		parts, err := partitionsToReset(ctx, adm, o, g)
		if err != nil {
			return err
		}
		offsets, err := prepareOffsetsToReset(ctx, cl, adm, o, g, parts, plan, w, stderr)
		if err != nil {
			return err
		}
		if o.execute {
			commit := kadm.Offsets{}
			for p, at := range offsets {
				commit.Add(kadm.Offset{Topic: p.topic, Partition: p.partition, At: at, LeaderEpoch: -1})
			}
			if err := adm.CommitAllOffsets(ctx, g, commit); err != nil {
				return fmt.Errorf("executing consumer group command failed due to %w", err)
			}
		}
		results = append(results, groupReset{g, offsets})
	}
	if o.export {
		fmt.Fprintln(w, exportOffsetsCSV(results, len(o.groups) == 1 && !o.allGroups))
		return nil
	}
	format := "%-30s %-30s %-10s %-15s\n"
	if len(results) > 0 {
		fmt.Fprintf(w, "\n"+format, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	}
	for _, r := range results {
		for _, p := range sortedResetKeys(r.offsets) {
			fmt.Fprintf(w, format, r.group, p.topic, strconv.Itoa(int(p.partition)), strconv.FormatInt(r.offsets[p], 10))
		}
	}
	return nil
}

func sortedResetKeys(m map[resetTP]int64) []resetTP {
	keys := make([]resetTP, 0, len(m))
	for p := range m {
		keys = append(keys, p)
	}
	sortResetTPs(keys)
	return keys
}

// partitionsToReset is getPartitionsToReset: committed partitions for --all-topics, the
// named partitions or all partitions of the named topics for --topic, none otherwise.
func partitionsToReset(ctx context.Context, adm *kadm.Client, o *groupsOpts, group string) ([]resetTP, error) {
	var out []resetTP
	switch {
	case o.allTopics:
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return nil, err
		}
		committed.Each(func(r kadm.OffsetResponse) { out = append(out, resetTP{r.Topic, r.Partition}) })
	case len(o.topics) > 0:
		var whole []string
		for _, t := range o.topics {
			name, list, hasParts := strings.Cut(t, ":")
			if !hasParts {
				whole = append(whole, name)
				continue
			}
			for _, s := range strings.Split(list, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
				if err != nil {
					return nil, fmt.Errorf("executing consumer group command failed due to For input string: \"%s\"", s)
				}
				out = append(out, resetTP{name, int32(n)})
			}
		}
		if len(whole) > 0 {
			md, err := adm.ListTopics(ctx, whole...)
			if err != nil {
				return nil, err
			}
			for _, name := range whole {
				td, ok := md[name]
				if !ok || td.Err != nil {
					e := td.Err
					if e == nil {
						e = kerr.UnknownTopicOrPartition
					}
					return nil, fmt.Errorf("executing consumer group command failed due to %w", e)
				}
				for _, p := range td.Partitions.Sorted() {
					out = append(out, resetTP{name, p.Partition})
				}
			}
		}
	}
	sortResetTPs(out)
	return out, nil
}

// resetListOffsets lists one offset spec (a timestamp, or -1 latest / -2 earliest) for parts,
// as the admin client's listOffsets does: answers by partition, -1 where the log has none.
func resetListOffsets(ctx context.Context, cl *kgo.Client, parts []resetTP, ts int64) (map[resetTP]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, p := range parts {
		i, ok := byTopic[p.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[p.topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.partition, ts, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	out := map[resetTP]int64{}
	if len(parts) == 0 {
		return out, nil
	}
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			return nil, fmt.Errorf("executing consumer group command failed due to %w", shard.Err)
		}
		resp := shard.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("executing consumer group command failed due to %w", err)
				}
				out[resetTP{t.Topic, p.Partition}] = p.Offset
			}
		}
	}
	return out, nil
}

// prepareOffsetsToReset is ConsumerGroupCommand.prepareOffsetsToReset.
func prepareOffsetsToReset(ctx context.Context, cl *kgo.Client, adm *kadm.Client, o *groupsOpts, group string,
	parts []resetTP, plan map[string]map[resetTP]int64, w, stderr io.Writer) (map[resetTP]int64, error) {
	fromSpec := func(ts int64, what string) (map[resetTP]int64, error) {
		got, err := resetListOffsets(ctx, cl, parts, ts)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if _, ok := got[p]; !ok {
				return nil, usageErr("Error getting %s offset of topic partition: %s", what, p)
			}
		}
		return got, nil
	}
	committed := func() (map[resetTP]int64, error) {
		c, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return nil, err
		}
		out := map[resetTP]int64{}
		c.Each(func(r kadm.OffsetResponse) {
			if r.Err == nil && r.At >= 0 {
				out[resetTP{r.Topic, r.Partition}] = r.At
			}
		})
		return out, nil
	}
	switch {
	case o.toOffset.set:
		req := map[resetTP]int64{}
		for _, p := range parts {
			req[p] = o.toOffset.v
		}
		return checkOffsetsRange(ctx, cl, req, stderr)
	case o.toEarliest:
		return fromSpec(-2, "starting")
	case o.toLatest:
		return fromSpec(-1, "ending")
	case o.shiftBy.set:
		cur, err := committed()
		if err != nil {
			return nil, err
		}
		req := map[resetTP]int64{}
		for _, p := range parts {
			at, ok := cur[p]
			if !ok {
				return nil, usageErr("Cannot shift offset for partition %s since there is no current committed offset", p)
			}
			req[p] = at + o.shiftBy.v
		}
		return checkOffsetsRange(ctx, cl, req, stderr)
	case o.toDatetime.set, o.byDuration.set:
		var ts int64
		if o.toDatetime.set {
			t, err := parseResetDatetime(o.toDatetime.v)
			if err != nil {
				return nil, err
			}
			ts = t.UnixMilli()
		} else {
			d, err := parseJavaDuration(o.byDuration.v)
			if err != nil {
				return nil, err
			}
			ts = time.Now().Add(-d).UnixMilli()
		}
		return logTimestampOffsets(ctx, cl, parts, ts, w)
	case o.fromFile.set:
		forGroup, ok := plan[group]
		if !ok {
			printGroupsError(w, fmt.Sprintf("No reset plan for group %s found", group))
			return map[resetTP]int64{}, nil
		}
		return checkOffsetsRange(ctx, cl, forGroup, stderr)
	case o.toCurrent:
		cur, err := committed()
		if err != nil {
			return nil, err
		}
		out := map[resetTP]int64{}
		var missing []resetTP
		for _, p := range parts {
			if at, ok := cur[p]; ok {
				out[p] = at
			} else {
				missing = append(missing, p)
			}
		}
		ends, err := fromSpec(-1, "ending")
		if err != nil {
			return nil, err
		}
		for _, p := range missing {
			out[p] = ends[p]
		}
		return out, nil
	}
	return nil, errors.New("no reset scenario")
}

// logTimestampOffsets is getLogTimestampOffsets: the first offset at or after ts, or, for a
// partition with none, the log end offset with Kafka's warning.
func logTimestampOffsets(ctx context.Context, cl *kgo.Client, parts []resetTP, ts int64, w io.Writer) (map[resetTP]int64, error) {
	got, err := resetListOffsets(ctx, cl, parts, ts)
	if err != nil {
		return nil, err
	}
	var empty []resetTP
	for _, p := range parts {
		if off, ok := got[p]; !ok || off == -1 {
			empty = append(empty, p)
		}
	}
	for _, p := range empty {
		fmt.Fprintf(w, "\nWarn: Partition %d from topic %s is empty. Falling back to latest known offset.\n", p.partition, p.topic)
	}
	ends, err := resetListOffsets(ctx, cl, empty, -1)
	if err != nil {
		return nil, err
	}
	for _, p := range empty {
		end, ok := ends[p]
		if !ok {
			return nil, usageErr("Error getting offset by timestamp of topic partition: %s", p)
		}
		got[p] = end
	}
	return got, nil
}

// checkOffsetsRange moves requested offsets into [log start, log end], with Kafka's warnings
// (logged, so on stderr).
func checkOffsetsRange(ctx context.Context, cl *kgo.Client, req map[resetTP]int64, stderr io.Writer) (map[resetTP]int64, error) {
	parts := sortedResetKeys(req)
	starts, err := resetListOffsets(ctx, cl, parts, -2)
	if err != nil {
		return nil, err
	}
	ends, err := resetListOffsets(ctx, cl, parts, -1)
	if err != nil {
		return nil, err
	}
	out := map[resetTP]int64{}
	for _, p := range parts {
		off := req[p]
		end, ok := ends[p]
		if !ok {
			return nil, fmt.Errorf("Unexpected non-existing offset value for topic partition %s", p)
		}
		switch start, hasStart := starts[p]; {
		case off > end:
			fmt.Fprintf(stderr, "WARN New offset (%d) is higher than latest offset for topic partition %s. Value will be set to %d\n", off, p, end)
			off = end
		case hasStart && off < start:
			fmt.Fprintf(stderr, "WARN New offset (%d) is lower than earliest offset for topic partition %s. Value will be set to %d\n", off, p, start)
			off = start
		}
		out[p] = off
	}
	return out, nil
}

// parseResetPlan reads --from-file: "topic,partition,offset" lines when one --group is given
// and the first line has that form, else "group,topic,partition,offset" lines.
func parseResetPlan(text, singleGroup string) (map[string]map[resetTP]int64, error) {
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && lines[len(lines)-1] == "" { // String.split drops trailing empties
		lines = lines[:len(lines)-1]
	}
	parse := func(line string, cols int) ([]string, error) {
		r := csv.NewReader(strings.NewReader(line))
		r.FieldsPerRecord = -1
		fields, err := r.Read()
		if err == io.EOF {
			fields, err = []string{""}, nil
		}
		if err != nil {
			return nil, err
		}
		if len(fields) > cols {
			return nil, fmt.Errorf("Too many entries: expected at most %d (value #%d (%d chars) \"%s\")", cols, cols, len(fields[cols]), fields[cols])
		}
		if len(fields) < cols {
			return nil, fmt.Errorf("Not enough column values: expected %d, found %d", cols, len(fields))
		}
		return fields, nil
	}
	record := func(f []string) (resetTP, int64, error) {
		p, err := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 32)
		if err != nil {
			return resetTP{}, 0, fmt.Errorf("Cannot deserialize value of type `int` from String \"%s\": not a valid `int` value", f[1])
		}
		off, err := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		if err != nil {
			return resetTP{}, 0, fmt.Errorf("Cannot deserialize value of type `long` from String \"%s\": not a valid `long` value", f[2])
		}
		return resetTP{f[0], int32(p)}, off, nil
	}
	plan := map[string]map[resetTP]int64{}
	add := func(g string, p resetTP, off int64) {
		if plan[g] == nil {
			plan[g] = map[resetTP]int64{}
		}
		plan[g][p] = off
	}
	oldFormat := false
	if singleGroup != "" && len(lines) > 0 {
		if f, err := parse(lines[0], 3); err == nil {
			_, _, err = record(f)
			oldFormat = err == nil
		}
	}
	for _, line := range lines {
		if oldFormat {
			f, err := parse(line, 3)
			if err != nil {
				return nil, err
			}
			p, off, err := record(f)
			if err != nil {
				return nil, err
			}
			add(singleGroup, p, off)
			continue
		}
		f, err := parse(line, 4)
		if err != nil {
			return nil, err
		}
		p, off, err := record(f[1:])
		if err != nil {
			return nil, err
		}
		add(f[0], p, off)
	}
	return plan, nil
}

// csvField quotes a value as Jackson's CSV writer does when it holds the separator, a quote,
// a line break or surrounding spaces.
func csvField(s string) string {
	if s == "" || !strings.ContainsAny(s, ",\"\r\n") && strings.TrimSpace(s) == s {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// exportOffsetsCSV is exportOffsetsToCsv: one line per partition, each ending in a newline.
func exportOffsetsCSV(results []groupReset, singleGroup bool) string {
	var b strings.Builder
	for _, r := range results {
		for _, p := range sortedResetKeys(r.offsets) {
			if !singleGroup {
				b.WriteString(csvField(r.group) + ",")
			}
			fmt.Fprintf(&b, "%s,%d,%d\n", csvField(p.topic), p.partition, r.offsets[p])
		}
	}
	return b.String()
}
