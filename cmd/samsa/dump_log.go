package main

// dump-log mirrors Kafka 3.7's kafka-dump-log.sh (kafka.tools.DumpLogSegments): its flags; the
// printing itself is logstore.DumpLog's.

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/samsa-kafka/samsa/logstore"
)

// dumpLogOpts are DumpLogSegments' options.
type dumpLogOpts struct {
	Files              []string
	PrintDataLog       bool // also implied by the decoder options, as in Kafka
	DeepIteration      bool // also implied by PrintDataLog
	VerifyIndexOnly    bool
	IndexSanityCheck   bool
	SkipRecordMetadata bool
	MaxMessageSize     int
	MaxBytes           int64
}

func parseDumpLogArgs(args []string, stderr io.Writer) (*dumpLogOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa dump-log", stderr)
	o := &dumpLogOpts{}
	var files optString
	var keyDecoder, valueDecoder optString
	var clusterMetadata, remoteLogMetadata, offsetsDecoder, transactionDecoder bool
	fs.Var(&files, "files", "REQUIRED: The comma separated list of data and index log files to be dumped.")
	fs.BoolVar(&o.PrintDataLog, "print-data-log", false, "If set, printing the messages content when dumping data logs. Automatically set if any decoder option is specified.")
	fs.BoolVar(&o.VerifyIndexOnly, "verify-index-only", false, "If set, just verify the index log without printing its content.")
	fs.BoolVar(&o.IndexSanityCheck, "index-sanity-check", false, "If set, just checks the index sanity without printing its content. This is the same check that is executed on broker startup to determine if an index needs rebuilding or not.")
	fs.IntVar(&o.MaxMessageSize, "max-message-size", 5*1024*1024, "Size of largest message.")
	fs.Int64Var(&o.MaxBytes, "max-bytes", math.MaxInt32, "Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")
	fs.BoolVar(&o.DeepIteration, "deep-iteration", false, "if set, uses deep instead of shallow iteration. Automatically set if print-data-log is enabled.")
	fs.BoolVar(&o.SkipRecordMetadata, "skip-record-metadata", false, "Whether to skip printing metadata for each record.")
	fs.BoolVar(&offsetsDecoder, "offsets-decoder", false, "If set, log data will be parsed as offset data from the __consumer_offsets topic (not supported yet).")
	fs.BoolVar(&transactionDecoder, "transaction-log-decoder", false, "If set, log data will be parsed as transaction metadata from the __transaction_state topic (not supported yet).")
	fs.BoolVar(&clusterMetadata, "cluster-metadata-decoder", false, "If set, log data will be parsed as cluster metadata records (KRaft only; not supported).")
	fs.BoolVar(&remoteLogMetadata, "remote-log-metadata-decoder", false, "If set, log data will be parsed as TopicBasedRemoteLogMetadataManager metadata records (not supported).")
	fs.Var(&keyDecoder, "key-decoder-class", "if set, used to deserialize the keys (only kafka.serializer.StringDecoder is supported).")
	fs.Var(&valueDecoder, "value-decoder-class", "if set, used to deserialize the messages (only kafka.serializer.StringDecoder is supported).")
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if !files.set {
		return nil, fs, usageErr("Missing required argument \"[files]\"")
	}
	for _, f := range strings.Split(files.v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.Files = append(o.Files, f)
		}
	}
	if len(o.Files) == 0 {
		return nil, fs, usageErr("Missing required argument \"[files]\"")
	}
	if clusterMetadata || remoteLogMetadata {
		return nil, fs, usageErr("--cluster-metadata-decoder and --remote-log-metadata-decoder are not supported by samsa (ZooKeeper mode, no tiered storage)")
	}
	if offsetsDecoder || transactionDecoder {
		return nil, fs, usageErr("--offsets-decoder and --transaction-log-decoder are not supported by samsa yet")
	}
	for _, dec := range []optString{keyDecoder, valueDecoder} {
		if dec.set && dec.v != "kafka.serializer.StringDecoder" {
			return nil, fs, usageErr("decoder %s is not supported; only kafka.serializer.StringDecoder is", dec.v)
		}
	}
	// DumpLogSegments: shouldPrintDataLog, then isDeepIteration.
	o.PrintDataLog = o.PrintDataLog || keyDecoder.set || valueDecoder.set
	o.DeepIteration = o.DeepIteration || o.PrintDataLog
	return o, fs, nil
}

// dumpLog prints the files as DumpLogSegments does; a variable so tests can stub it.
var dumpLog = func(stdout, stderr io.Writer, o *dumpLogOpts) error {
	return logstore.DumpLog(stdout, o.Files, logstore.DumpOptions{
		PrintDataLog:       o.PrintDataLog,
		DeepIteration:      o.DeepIteration,
		IndexSanityCheck:   o.IndexSanityCheck,
		VerifyIndexOnly:    o.VerifyIndexOnly,
		MaxMessageSize:     o.MaxMessageSize,
		MaxBytes:           o.MaxBytes,
		SkipRecordMetadata: o.SkipRecordMetadata,
		Stderr:             stderr,
	})
}

// runDumpLog is kafka-dump-log.sh.
func runDumpLog(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseDumpLogArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	if err := dumpLog(stdout, stderr, o); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
