package main

// replica-verification mirrors Kafka 3.7's kafka-replica-verification.sh
// (org.apache.kafka.tools.ReplicaVerificationTool): it fetches every partition of the chosen
// topics from every broker that holds a replica, as the debugging consumer (replica id -2,
// which followers serve up to their high watermark), and compares the replicas batch by batch
// (last offset and CRC) up to the high watermark. Rounds repeat: all brokers are fetched, then
// the batches are compared and the fetch offsets advance past what every replica agreed on.
// Every --report-interval-ms it prints "<time>: max lag is N for partition t-p at offset M
// among K partitions" (the largest distance between the high watermark and the verified
// offset); a checksum mismatch is printed and verification goes on; an offset mismatch is
// printed and ends the tool with exit code 1, as in Kafka. It runs until signalled.

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["replica-verification"] = command{runReplicaVerification, "check that all replicas of a set of topics hold the same data (kafka-replica-verification.sh)"}
}

const replicaVerificationDateLayout = "2006-01-02 15:04:05,000" // yyyy-MM-dd HH:mm:ss,SSS

type replicaVerificationOpts struct {
	brokerList     string
	fetchSize      int32
	maxWait        int32
	topicsInclude  string
	initialTime    int64
	reportInterval time.Duration
}

func parseReplicaVerificationArgs(args []string, stderr io.Writer) (*replicaVerificationOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa replica-verification", stderr)
	var brokerList, whiteList, include optString
	fetchSize, maxWait, initial, report := optInt{v: 1048576}, optInt{v: 1000}, optInt{v: -1}, optInt{v: 30000}
	var help bool
	fs.Var(&brokerList, "broker-list", "REQUIRED: The list of hostname and port of the server to connect to.")
	fs.Var(&fetchSize, "fetch-size", "The fetch size of each request. (default: 1048576)")
	fs.Var(&maxWait, "max-wait-ms", "The max amount of time each fetch request waits. (default: 1000)")
	fs.Var(&whiteList, "topic-white-list", "DEPRECATED use --topics-include instead; ignored if --topics-include specified. List of topics to verify replica consistency. (default: .*)")
	fs.Var(&include, "topics-include", "List of topics to verify replica consistency. (default: .*)")
	fs.Var(&initial, "time", "Timestamp for getting the initial offsets. (default: -1)")
	fs.Var(&report, "report-interval-ms", "The reporting interval. (default: 30000)")
	fs.BoolVar(&help, "help", false, "Print usage information.")
	if len(args) == 0 {
		return nil, fs, usageErr("Validate that all replicas for a set of topics have the same data.")
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	switch {
	case help:
		return nil, fs, usageErr("Validate that all replicas for a set of topics have the same data.")
	case !brokerList.set:
		return nil, fs, usageErr("Missing required argument \"[broker-list]\"")
	case include.set && whiteList.set:
		return nil, fs, usageErr("Option \"[topics-include]\" can't be used with option \"[topic-white-list]\"")
	}
	if err := validateBootstrapServer(brokerList.v); err != nil {
		return nil, fs, err
	}
	o := &replicaVerificationOpts{brokerList: brokerList.v, fetchSize: int32(fetchSize.v), maxWait: int32(maxWait.v),
		topicsInclude: ".*", initialTime: initial.v, reportInterval: time.Duration(report.v) * time.Millisecond}
	switch {
	case include.set:
		o.topicsInclude = include.v
	case whiteList.set:
		o.topicsInclude = whiteList.v
	}
	return o, fs, nil
}

// includeListRegex is TopicFilter.IncludeList's regex, matched against whole topic names:
// commas become alternatives, spaces and surrounding quotes are dropped.
func includeListRegex(raw string) (*regexp.Regexp, error) {
	r := strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(raw), ",", "|"), " ", "")
	r = strings.TrimRight(strings.TrimLeft(r, `"'`), `"'`)
	re, err := regexp.Compile("^(?:" + r + ")$")
	if err != nil {
		return nil, fmt.Errorf("%s is an invalid regex.", r)
	}
	return re, nil
}

func runReplicaVerification(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseReplicaVerificationArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return replicaVerification(ctx, o, stdout, stderr)
}

type rvTP struct {
	topic     string
	partition int32
}

func (p rvTP) String() string { return fmt.Sprintf("%s-%d", p.topic, p.partition) }

// rvFetched is one replica's answer for a partition: its high watermark and record batches.
type rvFetched struct {
	hw      int64
	records []byte
}

// rvBatch is what the tool compares of a batch: RecordBatch lastOffset, nextOffset, checksum.
type rvBatch struct {
	lastOffset, nextOffset int64
	checksum               uint32
}

// rvBatches splits a records field into batch headers; a trailing partial batch (a fetch cut
// at its size limit) is left out, as MemoryRecords' batch iterator does.
func rvBatches(b []byte) []rvBatch {
	var out []rvBatch
	for len(b) >= 61 {
		base := int64(binary.BigEndian.Uint64(b[0:]))
		size := int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 49 || len(b) < 12+size {
			break
		}
		last := base + int64(int32(binary.BigEndian.Uint32(b[23:])))
		out = append(out, rvBatch{last, last + 1, binary.BigEndian.Uint32(b[17:])})
		b = b[12+size:]
	}
	return out
}

// replicaBuffer is ReplicaVerificationTool.ReplicaBuffer: the fetch offsets, and each round's
// fetched data per partition and replica.
type replicaBuffer struct {
	expectedReplicas map[rvTP]int
	fetchOffset      map[rvTP]int64
	fetched          map[rvTP]map[int32]rvFetched
	reportInterval   time.Duration
	lastReport       time.Time
	now              func() time.Time
}

// verify is ReplicaBuffer.verifyCheckSum: compares this round's batches, advances the fetch
// offsets and reports the max lag when the interval has passed. It returns false when two
// replicas disagree on an offset (Kafka exits 1 there).
func (rb *replicaBuffer) verify(printLine func(string)) bool {
	maxLag, offsetWithMaxLag := int64(-1), int64(-1)
	maxLagTP := "null"
	parts := make([]rvTP, 0, len(rb.fetched))
	for p := range rb.fetched {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topic != parts[j].topic {
			return parts[i].topic < parts[j].topic
		}
		return parts[i].partition < parts[j].partition
	})
	stamp := func() string { return rb.now().Format(replicaVerificationDateLayout) }
	for _, p := range parts {
		perReplica := rb.fetched[p]
		replicas := make([]int32, 0, len(perReplica))
		maxHw := int64(-1)
		batches := map[int32][]rvBatch{}
		for id, f := range perReplica {
			replicas = append(replicas, id)
			maxHw = max(maxHw, f.hw)
			batches[id] = rvBatches(f.records)
		}
		sort.Slice(replicas, func(i, j int) bool { return replicas[i] < replicas[j] })
		for i := 0; ; i++ {
			inAll := len(replicas) > 0
			var first *rvBatch
			var firstReplica int32
			for _, id := range replicas {
				if i >= len(batches[id]) {
					inAll = false
					continue
				}
				b := batches[id][i]
				if b.lastOffset >= perReplica[id].hw { // only verify up to the high watermark
					inAll = false
					continue
				}
				if first == nil {
					first, firstReplica = &b, id
					continue
				}
				if first.lastOffset != b.lastOffset {
					printLine(fmt.Sprintf("%s: partition %s: replica %d's offset %d doesn't match replica %d's offset %d",
						stamp(), p, firstReplica, first.lastOffset, id, b.lastOffset))
					return false
				}
				if first.checksum != b.checksum {
					printLine(fmt.Sprintf("%s: partition %s has unmatched checksum at offset %d; replica %d's checksum %d; replica %d's checksum %d",
						stamp(), p, b.lastOffset, firstReplica, first.checksum, id, b.checksum))
				}
			}
			if !inAll {
				break
			}
			rb.fetchOffset[p] = first.nextOffset
		}
		if maxHw-rb.fetchOffset[p] > maxLag {
			offsetWithMaxLag = rb.fetchOffset[p]
			maxLag = maxHw - offsetWithMaxLag
			maxLagTP = p.String()
		}
		rb.fetched[p] = map[int32]rvFetched{}
	}
	if now := rb.now(); now.Sub(rb.lastReport) > rb.reportInterval {
		printLine(fmt.Sprintf("%s: max lag is %d for partition %s at offset %d among %d partitions",
			now.Format(replicaVerificationDateLayout), maxLag, maxLagTP, offsetWithMaxLag, len(rb.fetched)))
		rb.lastReport = now
	}
	return true
}

func replicaVerification(ctx context.Context, o *replicaVerificationOpts, stdout, stderr io.Writer) int {
	include, err := includeListRegex(o.topicsInclude)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(splitServers(o.brokerList)...), kgo.ClientID("replica-verification"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	topicIDs := map[string][16]byte{}
	brokerParts := map[int32][]rvTP{}
	expected := map[rvTP]int{}
	var parts []rvTP
	for _, td := range md.Topics.Sorted() {
		if td.Err != nil || !include.MatchString(td.Topic) {
			continue
		}
		topicIDs[td.Topic] = td.ID
		for _, pd := range td.Partitions.Sorted() {
			p := rvTP{td.Topic, pd.Partition}
			parts = append(parts, p)
			for _, r := range pd.Replicas {
				brokerParts[r] = append(brokerParts[r], p)
				expected[p]++
			}
		}
	}
	if len(parts) == 0 {
		fmt.Fprintln(stderr, "ERROR No topics found. [topics-include] if specified, is either filtering out all topics or there is no topic.")
		return 1
	}
	rb := &replicaBuffer{expectedReplicas: expected, fetchOffset: map[rvTP]int64{}, fetched: map[rvTP]map[int32]rvFetched{},
		reportInterval: o.reportInterval, now: time.Now}
	if err := rb.initialOffsets(ctx, adm, parts, o.initialTime); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, p := range parts {
		rb.fetched[p] = map[int32]rvFetched{}
	}
	brokers := make([]int32, 0, len(brokerParts))
	for id := range brokerParts {
		brokers = append(brokers, id)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	rb.lastReport = time.Now()
	fmt.Fprintf(stdout, "%s: verification process is started\n", time.Now().Format(replicaVerificationDateLayout))
	printLine := func(s string) { fmt.Fprintln(stdout, s) }
	for ctx.Err() == nil {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, id := range brokers {
			wg.Add(1)
			go func(id int32) {
				defer wg.Done()
				got := rvFetch(ctx, cl, id, brokerParts[id], topicIDs, rb.fetchOffset, o)
				mu.Lock()
				defer mu.Unlock()
				for p, f := range got {
					rb.fetched[p][id] = f
				}
			}(id)
		}
		wg.Wait()
		if ctx.Err() != nil {
			break
		}
		if !rb.verify(printLine) {
			return 1
		}
	}
	return 0
}

// initialOffsets is ReplicaVerificationTool.initialOffsets: end offsets for -1, beginning
// offsets for -2, else the offsets for that timestamp.
func (rb *replicaBuffer) initialOffsets(ctx context.Context, adm *kadm.Client, parts []rvTP, ts int64) error {
	topics := map[string]bool{}
	var names []string
	for _, p := range parts {
		if !topics[p.topic] {
			topics[p.topic] = true
			names = append(names, p.topic)
		}
	}
	var listed kadm.ListedOffsets
	var err error
	switch ts {
	case -1:
		listed, err = adm.ListEndOffsets(ctx, names...)
	case -2:
		listed, err = adm.ListStartOffsets(ctx, names...)
	default:
		listed, err = adm.ListOffsetsAfterMilli(ctx, ts, names...)
	}
	if err != nil {
		return err
	}
	for _, p := range parts {
		lo, ok := listed.Lookup(p.topic, p.partition)
		if !ok || lo.Err != nil {
			return fmt.Errorf("cannot get the initial offset of %s: %v", p, lo.Err)
		}
		rb.fetchOffset[p] = lo.Offset
	}
	return nil
}

// rvFetch is one ReplicaFetcher round: a Fetch as the debugging consumer (replica id -2) to
// broker id for parts at their fetch offsets. A failed fetch counts as an empty answer with
// an unknown high watermark, as in Kafka.
func rvFetch(ctx context.Context, cl *kgo.Client, id int32, parts []rvTP, topicIDs map[string][16]byte, offsets map[rvTP]int64, o *replicaVerificationOpts) map[rvTP]rvFetched {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -2, -2, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = o.maxWait, 1, 1<<31-1
	req.SessionEpoch = -1 // a full fetch without a session
	idx := map[string]int{}
	for _, p := range parts {
		i, ok := idx[p.topic]
		if !ok {
			i = len(req.Topics)
			idx[p.topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.topic, topicIDs[p.topic]
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, offsets[p], o.fetchSize
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	out := map[rvTP]rvFetched{}
	for _, p := range parts {
		out[p] = rvFetched{hw: -1}
	}
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return out
	}
	names := map[[16]byte]string{}
	for t, tid := range topicIDs {
		names[tid] = t
	}
	for _, t := range resp.Topics {
		name := t.Topic
		if name == "" {
			name = names[t.TopicID]
		}
		for _, rp := range t.Partitions {
			p := rvTP{name, rp.Partition}
			if _, ok := out[p]; ok {
				out[p] = rvFetched{hw: rp.HighWatermark, records: rp.RecordBatches}
			}
		}
	}
	return out
}
