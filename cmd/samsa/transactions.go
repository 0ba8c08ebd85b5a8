package main

// transactions mirrors Kafka 3.7's kafka-transactions.sh (org.apache.kafka.tools.TransactionsCommand)
// with the requests Kafka's Admin client sends for it:
//
//	samsa transactions --bootstrap-server H:P list
//	samsa transactions --bootstrap-server H:P describe --transactional-id ID
//	samsa transactions --bootstrap-server H:P describe-producers --topic T --partition P [--broker-id B]
//	samsa transactions --bootstrap-server H:P find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MIN]
//	samsa transactions --bootstrap-server H:P abort --topic T --partition P (--start-offset O | --producer-id I --producer-epoch E --coordinator-epoch C)
//
// Tables are Kafka's prettyPrintTable: every column padded to its widest cell and followed by a
// tab. Errors are Kafka's printErrorAndExit lines ("<what failed>: <cause>. Enable debug logging
// for additional detail.") with exit code 1.
//
// Admin calls: DescribeProducers goes to each partition's leader (or to --broker-id), as
// Admin.describeProducers; ListTransactions to every broker; DescribeTransactions to the
// transactional id's coordinator; abort sends WriteTxnMarkers with an ABORT marker to the
// partition's leader, as Admin.abortTransaction (KIP-664). Deviations: an unknown topic or
// partition fails at once instead of being retried until the admin timeout, and a replica
// named by --broker-id that does not host the partition is retried for a few seconds only.
// --command-config is read: its security settings are honoured, those samsa cannot honour
// refused, the other keys ignored with a warning (adminClientSecurity).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCommands are kafka-transactions.sh's sub-commands, in its help order.
var txnCommands = []string{"list", "describe", "describe-producers", "abort", "find-hanging"}

type txnOpts struct {
	bootstrap string
	command   string

	transactionalID                                    optString
	topic                                              optString
	partition, brokerID                                optInt
	startOffset, producerID, producerEpoch, coordEpoch optInt
	maxTxnTimeoutMin                                   int64 // find-hanging --max-transaction-timeout (minutes)
	timeout                                            time.Duration
	commandConfig                                      optString
}

func parseTransactionsArgs(args []string, stderr io.Writer) (*txnOpts, *flag.FlagSet, error) {
	o := &txnOpts{timeout: 60 * time.Second, maxTxnTimeoutMin: 15} // default.api.timeout.ms
	var bootstrap, commandConfig optString
	addBase := func(fs *flag.FlagSet) {
		fs.Var(&bootstrap, "bootstrap-server", "REQUIRED: hostname and port for the broker to connect to, in the form `host:port` (multiple comma-separated entries can be given)")
		fs.Var(&commandConfig, "command-config", "property file containing configs to be passed to admin client")
	}
	base := newFlagSet("samsa transactions", stderr)
	addBase(base)
	// The base options come before COMMAND, as argparse4j's sub-parsers want; flag stops at
	// the first non-flag argument, which is COMMAND.
	if err := base.Parse(args); err != nil {
		return nil, base, err
	}
	rest := base.Args()
	if len(rest) == 0 {
		return nil, base, usageErr("too few arguments: COMMAND is one of %s", strings.Join(txnCommands, ", "))
	}
	o.command = rest[0]
	fs := newFlagSet("samsa transactions "+o.command, stderr)
	addBase(fs) // accepted after COMMAND too
	var maxTimeout optInt
	switch o.command {
	case "list":
	case "describe":
		fs.Var(&o.transactionalID, "transactional-id", "transactional id")
	case "describe-producers":
		fs.Var(&o.brokerID, "broker-id", "optional broker id to describe the producer state on a specific replica")
		fs.Var(&o.topic, "topic", "topic name")
		fs.Var(&o.partition, "partition", "partition number")
	case "abort":
		fs.Var(&o.topic, "topic", "topic name")
		fs.Var(&o.partition, "partition", "partition number")
		fs.Var(&o.startOffset, "start-offset", "start offset of the transaction to abort (brokers on 3.0 and above)")
		fs.Var(&o.producerID, "producer-id", "producer id (brokers older than 3.0)")
		fs.Var(&o.producerEpoch, "producer-epoch", "producer epoch (brokers older than 3.0)")
		fs.Var(&o.coordEpoch, "coordinator-epoch", "coordinator epoch (brokers older than 3.0)")
	case "find-hanging":
		fs.Var(&o.brokerID, "broker-id", "broker id to search for hanging transactions")
		fs.Var(&maxTimeout, "max-transaction-timeout", "maximum transaction timeout in minutes to limit the scope of the search (default 15)")
		fs.Var(&o.topic, "topic", "topic name to limit search to")
		fs.Var(&o.partition, "partition", "partition number")
	default:
		return nil, base, usageErr("argument COMMAND: invalid choice: '%s' (choose from '%s')", o.command, strings.Join(txnCommands, "', '"))
	}
	if err := parseFlags(fs, rest[1:]); err != nil {
		return nil, fs, err
	}
	o.bootstrap, o.commandConfig = bootstrap.v, commandConfig
	if !bootstrap.set {
		return nil, fs, usageErr("argument --bootstrap-server is required")
	}
	if maxTimeout.set {
		o.maxTxnTimeoutMin = maxTimeout.v
	}
	required := map[string][]struct {
		name string
		set  bool
	}{
		"describe":           {{"--transactional-id", o.transactionalID.set}},
		"describe-producers": {{"--topic", o.topic.set}, {"--partition", o.partition.set}},
		"abort":              {{"--topic", o.topic.set}, {"--partition", o.partition.set}},
	}
	for _, r := range required[o.command] {
		if !r.set {
			return nil, fs, usageErr("argument %s is required", r.name)
		}
	}
	// argparse4j's Integer, Short and Long types.
	for _, c := range []struct {
		name     string
		v        optInt
		min, max int64
	}{
		{"--partition", o.partition, math.MinInt32, math.MaxInt32},
		{"--broker-id", o.brokerID, math.MinInt32, math.MaxInt32},
		{"--producer-epoch", o.producerEpoch, math.MinInt16, math.MaxInt16},
		{"--coordinator-epoch", o.coordEpoch, math.MinInt32, math.MaxInt32},
		{"--max-transaction-timeout", maxTimeout, math.MinInt32, math.MaxInt32},
	} {
		if c.v.set && (c.v.v < c.min || c.v.v > c.max) {
			return nil, fs, usageErr("argument %s: could not convert '%d' to %s", c.name, c.v.v, map[bool]string{true: "Short", false: "Integer"}[c.max == math.MaxInt16])
		}
	}
	return o, fs, nil
}

// runTransactions is kafka-transactions.sh.
func runTransactions(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseTransactionsArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	sec, ok := adminClientSecurity("transactions", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap, "adminclient-1", o.timeout, sec, func(ctx context.Context, cl *kgo.Client) error {
		t := &txnTool{cl: cl, adm: kadm.NewClient(cl), out: stdout, now: time.Now, retryBackoff: 100 * time.Millisecond}
		return t.run(ctx, o)
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// txnTool runs one command; used by one goroutine.
type txnTool struct {
	cl  *kgo.Client
	adm *kadm.Client
	out io.Writer
	now func() time.Time
	// retryBackoff is the pause between retries (the admin's retry.backoff.ms, 100 ms).
	retryBackoff time.Duration
}

func (t *txnTool) run(ctx context.Context, o *txnOpts) error {
	switch o.command {
	case "list":
		return t.list(ctx)
	case "describe":
		return t.describe(ctx, o.transactionalID.v)
	case "describe-producers":
		broker := int32(-1)
		if o.brokerID.set {
			broker = int32(o.brokerID.v)
		}
		return t.describeProducersCmd(ctx, topicPartition{o.topic.v, int32(o.partition.v)}, broker)
	case "abort":
		return t.abort(ctx, o)
	case "find-hanging":
		return t.findHanging(ctx, o)
	}
	return fmt.Errorf("Unexpected command %s", o.command)
}

// topicPartition prints as Java's TopicPartition: "topic-partition".
type topicPartition struct {
	topic     string
	partition int32
}

func (p topicPartition) String() string { return p.topic + "-" + strconv.Itoa(int(p.partition)) }

func sortTopicPartitions(tps []topicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		return tps[i].topic < tps[j].topic || tps[i].topic == tps[j].topic && tps[i].partition < tps[j].partition
	})
}

// adminError is an Admin client exception: a Kafka error with the message the Admin's handler
// gives it (error.exception(message) in Java).
type adminError struct {
	code *kerr.Error
	msg  string
}

func (e *adminError) Error() string { return e.msg }
func (e *adminError) Unwrap() error { return e.code }

// causeMessage is Throwable.getMessage() for err: the Admin's message, else the Kafka error's
// default message (Errors.message()), else the Go error.
func causeMessage(err error) string {
	var ae *adminError
	if errors.As(err, &ae) {
		return ae.msg
	}
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(se.Errs) > 0 {
		return causeMessage(se.Errs[0].Err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Description
	}
	return err.Error()
}

// failure is TransactionsCommand.printErrorAndExit(message, cause)'s line.
func failure(message string, cause error) error {
	return fmt.Errorf("%s: %s. Enable debug logging for additional detail.", message, causeMessage(cause))
}

// prettyPrintTable is TransactionsCommand.prettyPrintTable: each cell padded to its column's
// width (Java String.length) and followed by a tab.
func prettyPrintTable(w io.Writer, headers []string, rows [][]string) {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i := range headers {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	printRow := func(r []string) {
		var b strings.Builder
		for i, v := range r {
			b.WriteString(v)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v)))
			b.WriteByte('\t')
		}
		fmt.Fprintln(w, b.String())
	}
	printRow(headers)
	for _, r := range rows {
		printRow(r)
	}
}

// ---- list ----

var listTransactionsHeaders = []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}

func (t *txnTool) list(ctx context.Context) error {
	listed, err := t.listTransactions(ctx, nil)
	if err != nil {
		return failure("Failed to list transactions", err)
	}
	fmt.Fprint(t.out, formatListTransactions(listed))
	return nil
}

// listTransactions is Admin.listTransactions (ListTransactionsHandler): ListTransactions to
// every broker, filtered by producer ids when given; a broker whose coordinator is loading is
// asked again, any other error fails the call.
func (t *txnTool) listTransactions(ctx context.Context, pids []int64) ([]kadm.ListedTransaction, error) {
	md, err := t.adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, err
	}
	var out []kadm.ListedTransaction
	for _, b := range md.Brokers.NodeIDs() {
		for {
			req := kmsg.NewPtrListTransactionsRequest()
			req.ProducerIDFilters = pids
			kresp, err := t.cl.Broker(int(b)).Request(ctx, req)
			if err != nil {
				return nil, err
			}
			resp := kresp.(*kmsg.ListTransactionsResponse)
			ke := kerr.TypedErrorForCode(resp.ErrorCode)
			switch ke {
			case nil:
				for _, s := range resp.TransactionStates {
					out = append(out, kadm.ListedTransaction{Coordinator: b, TxnID: s.TransactionalID, ProducerID: s.ProducerID, State: s.TransactionState})
				}
			case kerr.CoordinatorLoadInProgress:
				if err := t.sleep(ctx); err != nil {
					return nil, err
				}
				continue
			case kerr.CoordinatorNotAvailable:
				return nil, &adminError{ke, fmt.Sprintf("ListTransactions request sent to broker %d failed because the coordinator is shutting down", b)}
			default:
				return nil, &adminError{ke, fmt.Sprintf("ListTransactions request sent to broker %d failed with an unexpected exception", b)}
			}
			break
		}
	}
	return out, nil
}

// formatListTransactions prints the listings per coordinator (Admin's allByBrokerId), by
// transactional id within one.
func formatListTransactions(listed []kadm.ListedTransaction) string {
	sort.SliceStable(listed, func(i, j int) bool {
		return listed[i].Coordinator < listed[j].Coordinator ||
			listed[i].Coordinator == listed[j].Coordinator && listed[i].TxnID < listed[j].TxnID
	})
	rows := make([][]string, 0, len(listed))
	for _, l := range listed {
		rows = append(rows, []string{l.TxnID, strconv.Itoa(int(l.Coordinator)), strconv.FormatInt(l.ProducerID, 10), l.State})
	}
	var b strings.Builder
	prettyPrintTable(&b, listTransactionsHeaders, rows)
	return b.String()
}

// ---- describe ----

var describeTransactionsHeaders = []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
	"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"}

func (t *txnTool) describe(ctx context.Context, id string) error {
	described, err := t.describeTransactions(ctx, []string{id})
	if err != nil {
		return failure("Failed to describe transaction state of transactional-id `"+id+"`", err)
	}
	d, ok := described[id]
	if !ok {
		return failure("Failed to describe transaction state of transactional-id `"+id+"`",
			&adminError{kerr.TransactionalIDNotFound, "DescribeTransactions request for transactionalId `" + id + "` failed because the ID could not be found"})
	}
	fmt.Fprint(t.out, formatDescribeTransaction(d, t.now()))
	return nil
}

func formatDescribeTransaction(d kadm.DescribedTransaction, now time.Time) string {
	start, duration := "None", "None"
	if d.StartTimestamp >= 0 {
		start = strconv.FormatInt(d.StartTimestamp, 10)
		duration = strconv.FormatInt(now.UnixMilli()-d.StartTimestamp, 10)
	}
	tps := transactionPartitions(d)
	parts := make([]string, len(tps))
	for i, p := range tps {
		parts[i] = p.String()
	}
	row := []string{strconv.Itoa(int(d.Coordinator)), d.TxnID, strconv.FormatInt(d.ProducerID, 10), strconv.Itoa(int(d.ProducerEpoch)),
		d.State, strconv.Itoa(int(d.TimeoutMillis)), start, duration, strings.Join(parts, ",")}
	var b strings.Builder
	prettyPrintTable(&b, describeTransactionsHeaders, [][]string{row})
	return b.String()
}

func transactionPartitions(d kadm.DescribedTransaction) []topicPartition {
	var tps []topicPartition
	for topic, ps := range d.Topics {
		for p := range ps {
			tps = append(tps, topicPartition{topic, p})
		}
	}
	sortTopicPartitions(tps)
	return tps
}

// describeTransactions describes ids at their coordinators (DescribeTransactionsHandler):
// TRANSACTIONAL_ID_NOT_FOUND leaves an id out of the result, coordinator moves and loads are
// retried until ctx ends, and any other error fails the call.
func (t *txnTool) describeTransactions(ctx context.Context, ids []string) (map[string]kadm.DescribedTransaction, error) {
	out := map[string]kadm.DescribedTransaction{}
	pending := ids
	for {
		described, err := t.adm.DescribeTransactions(ctx, pending...)
		var retry []string
		if err != nil {
			if !retriableCoordinatorError(err) || ctx.Err() != nil {
				return nil, err
			}
			retry = pending
		}
		for _, id := range pending {
			d, ok := described[id]
			if !ok {
				continue
			}
			switch {
			case d.Err == nil:
				out[id] = d
			case errors.Is(d.Err, kerr.TransactionalIDNotFound):
			case retriableCoordinatorError(d.Err):
				retry = append(retry, id)
			case errors.Is(d.Err, kerr.TransactionalIDAuthorizationFailed):
				return nil, &adminError{kerr.TransactionalIDAuthorizationFailed, "DescribeTransactions request for transactionalId `" + id + "` failed due to authorization failure"}
			default:
				var ke *kerr.Error
				errors.As(d.Err, &ke)
				return nil, &adminError{ke, "DescribeTransactions request for transactionalId `" + id + "` failed due to unexpected error"}
			}
		}
		if len(retry) == 0 {
			return out, nil
		}
		pending = retry
		if err := t.sleep(ctx); err != nil {
			return nil, err
		}
	}
}

func retriableCoordinatorError(err error) bool {
	return errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable)
}

func (t *txnTool) sleep(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(t.retryBackoff):
		return nil
	}
}

// ---- describe-producers ----

var describeProducersHeaders = []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"}

type activeProducer = kmsg.DescribeProducersResponseTopicPartitionActiveProducer

func (t *txnTool) describeProducersCmd(ctx context.Context, tp topicPartition, broker int32) error {
	res, err := t.describeProducers(ctx, []topicPartition{tp}, broker)
	if err != nil {
		on := "leader"
		if broker >= 0 {
			on = "broker " + strconv.Itoa(int(broker))
		}
		return failure("Failed to describe producers for partition "+tp.String()+" on "+on, err)
	}
	fmt.Fprint(t.out, formatDescribeProducers(res[tp]))
	return nil
}

func formatDescribeProducers(producers []activeProducer) string {
	rows := make([][]string, 0, len(producers))
	for _, p := range producers {
		start := "None"
		if p.CurrentTxnStartOffset >= 0 {
			start = strconv.FormatInt(p.CurrentTxnStartOffset, 10)
		}
		rows = append(rows, []string{strconv.FormatInt(p.ProducerID, 10), strconv.Itoa(int(p.ProducerEpoch)),
			strconv.Itoa(int(coordinatorEpochOrElse(p.CoordinatorEpoch, -1))), strconv.Itoa(int(p.LastSequence)),
			strconv.FormatInt(p.LastTimestamp, 10), start})
	}
	var b strings.Builder
	prettyPrintTable(&b, describeProducersHeaders, rows)
	return b.String()
}

// coordinatorEpochOrElse is ProducerState.coordinatorEpoch().orElse(def): a negative epoch is absent.
func coordinatorEpochOrElse(e, def int32) int32 {
	if e < 0 {
		return def
	}
	return e
}

// unknownReplicaRetry bounds the retries of UNKNOWN_TOPIC_OR_PARTITION from a broker named by
// --broker-id (Kafka retries until the admin timeout).
const unknownReplicaRetry = 5 * time.Second

// describeProducers is Admin.describeProducers: DescribeProducers for tps sent to broker
// (>= 0) or to each partition's leader, with DescribeProducersHandler's error handling.
func (t *txnTool) describeProducers(ctx context.Context, tps []topicPartition, broker int32) (map[topicPartition][]activeProducer, error) {
	out := make(map[topicPartition][]activeProducer, len(tps))
	if broker >= 0 {
		// Kafka waits for the node until the admin timeout; a broker that is not in the
		// cluster fails at once here.
		md, err := t.adm.BrokerMetadata(ctx)
		if err != nil {
			return nil, err
		}
		if !containsInt32(md.Brokers.NodeIDs(), broker) {
			return nil, &adminError{kerr.BrokerNotAvailable, fmt.Sprintf("Broker %d is not in the cluster metadata", broker)}
		}
	}
	pending := tps
	var lastErr error
	unknownSince := time.Time{}
	for {
		byBroker := map[int32][]topicPartition{}
		var retry []topicPartition
		if broker >= 0 {
			byBroker[broker] = pending
		} else {
			leaders, err := t.leaders(ctx, pending)
			if err != nil {
				return nil, err
			}
			for _, p := range pending {
				if l := leaders[p]; l >= 0 {
					byBroker[l] = append(byBroker[l], p)
				} else {
					retry = append(retry, p)
					lastErr = kerr.LeaderNotAvailable
				}
			}
		}
		brokers := make([]int32, 0, len(byBroker))
		for b := range byBroker {
			brokers = append(brokers, b)
		}
		sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
		for _, b := range brokers {
			ps := byBroker[b]
			req := kmsg.NewPtrDescribeProducersRequest()
			byTopic := map[string]int{}
			for _, p := range ps {
				i, ok := byTopic[p.topic]
				if !ok {
					i = len(req.Topics)
					byTopic[p.topic] = i
					rt := kmsg.NewDescribeProducersRequestTopic()
					rt.Topic = p.topic
					req.Topics = append(req.Topics, rt)
				}
				req.Topics[i].Partitions = append(req.Topics[i].Partitions, p.partition)
			}
			kresp, err := t.cl.Broker(int(b)).Request(ctx, req)
			if err != nil {
				if ctx.Err() != nil {
					return nil, firstErr(lastErr, err)
				}
				lastErr = err
				retry = append(retry, ps...)
				continue
			}
			resp := kresp.(*kmsg.DescribeProducersResponse)
			seen := map[topicPartition]bool{}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					p := topicPartition{rt.Topic, rp.Partition}
					seen[p] = true
					if rp.ErrorCode == 0 {
						out[p] = rp.ActiveProducers
						continue
					}
					ke := kerr.TypedErrorForCode(rp.ErrorCode)
					switch ke {
					case kerr.NotLeaderForPartition:
						if broker >= 0 {
							return nil, &adminError{ke, fmt.Sprintf("Failed to describe active producers for partition %s on brokerId %d", p, broker)}
						}
						retry = append(retry, p)
					case kerr.UnknownTopicOrPartition:
						if unknownSince.IsZero() {
							unknownSince = t.now()
						}
						if broker >= 0 && t.now().Sub(unknownSince) > unknownReplicaRetry {
							return nil, ke
						}
						retry = append(retry, p)
					case kerr.InvalidTopicException:
						msg := ke.Description
						if rp.ErrorMessage != nil {
							msg = *rp.ErrorMessage
						}
						return nil, &adminError{ke, fmt.Sprintf("Failed to fetch metadata for partition %s due to invalid topic error: %s", p, msg)}
					case kerr.TopicAuthorizationFailed:
						return nil, &adminError{ke, fmt.Sprintf("Failed to describe active producers for partition %s due to authorization failure on topic `%s`", p, p.topic)}
					default:
						return nil, &adminError{ke, fmt.Sprintf("Failed to describe active producers for partition %s due to unexpected error", p)}
					}
					lastErr = ke
				}
			}
			for _, p := range ps {
				if !seen[p] {
					retry = append(retry, p)
				}
			}
		}
		if len(retry) == 0 {
			return out, nil
		}
		pending = retry
		if err := t.sleep(ctx); err != nil {
			return nil, firstErr(lastErr, err)
		}
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// leaders maps each partition to its leader from fresh metadata (-1: no leader now). An
// unknown topic or partition is an error at once.
func (t *txnTool) leaders(ctx context.Context, tps []topicPartition) (map[topicPartition]int32, error) {
	topics := map[string]bool{}
	var names []string
	for _, p := range tps {
		if !topics[p.topic] {
			topics[p.topic] = true
			names = append(names, p.topic)
		}
	}
	md, err := t.adm.Metadata(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make(map[topicPartition]int32, len(tps))
	for _, p := range tps {
		td, ok := md.Topics[p.topic]
		if !ok {
			return nil, kerr.UnknownTopicOrPartition
		}
		if td.Err != nil && !errors.Is(td.Err, kerr.LeaderNotAvailable) {
			return nil, td.Err
		}
		pd, ok := td.Partitions[p.partition]
		if !ok {
			if td.Err != nil {
				out[p] = -1
				continue
			}
			return nil, kerr.UnknownTopicOrPartition
		}
		out[p] = pd.Leader
	}
	return out, nil
}

// ---- abort ----
