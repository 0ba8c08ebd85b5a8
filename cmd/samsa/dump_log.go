package main

// dump-log mirrors Kafka 3.7's kafka-dump-log.sh (kafka.tools.DumpLogSegments): its flags and
// its message parsers for __consumer_offsets (--offsets-decoder: GroupMetadataManager's
// formatRecordKeyAndValue) and __transaction_state (--transaction-log-decoder: TransactionLog's);
// the printing itself is logstore.DumpLog's.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/coordinator/transaction"
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
	// Parser decodes each data record's key and value (nil: StringDecoder).
	Parser func(key, value []byte) (k, v *string, err error)
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
	fs.BoolVar(&offsetsDecoder, "offsets-decoder", false, "If set, log data will be parsed as offset data from the __consumer_offsets topic.")
	fs.BoolVar(&transactionDecoder, "transaction-log-decoder", false, "If set, log data will be parsed as transaction metadata from the __transaction_state topic.")
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
	// DumpLogSegmentsOptions.messageParser: the offsets decoder wins over the transaction one.
	switch {
	case offsetsDecoder:
		o.Parser = offsetsMessage
	case transactionDecoder:
		o.Parser = transactionLogMessage
	}
	for _, dec := range []optString{keyDecoder, valueDecoder} {
		if dec.set && dec.v != "kafka.serializer.StringDecoder" {
			return nil, fs, usageErr("decoder %s is not supported; only kafka.serializer.StringDecoder is", dec.v)
		}
	}
	// DumpLogSegments: shouldPrintDataLog, then isDeepIteration.
	o.PrintDataLog = o.PrintDataLog || keyDecoder.set || valueDecoder.set || offsetsDecoder || transactionDecoder
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
		Parser:             o.Parser,
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

// offsetsMessage is GroupMetadataManager.formatRecordKeyAndValue (Kafka 3.7), the
// --offsets-decoder: "offset_commit::group=G,partition=T-P" with "offset=O[,metadata=M]", or
// "group_metadata::group=G" with a JSON summary of the group; "<DELETE>" for a tombstone and
// "unknown::version=V" (no payload) for a key of another record type. A record Kafka cannot
// decode stops the dump with an error, as Kafka's tool stops with an exception.
func offsetsMessage(key, value []byte) (k, v *string, err error) {
	if key == nil {
		return nil, nil, errors.New("Failed to decode message using offset topic decoder (message had a missing key)")
	}
	if len(key) < 2 {
		return nil, nil, fmt.Errorf("Failed to decode message using offset topic decoder (key of %d bytes)", len(key))
	}
	if version := int16(binary.BigEndian.Uint16(key)); version < 0 || version > 2 {
		ks := fmt.Sprintf("unknown::version=%d", version)
		return &ks, nil, nil
	}
	r, err := group.DecodeRecord(key, value)
	if err != nil {
		return nil, nil, err
	}
	var ks, vs string
	switch {
	case r.IsOffset:
		ks = fmt.Sprintf("offset_commit::group=%s,partition=%s-%d", r.Group, r.TP.Topic, r.TP.Partition)
		switch {
		case r.Offset == nil:
			vs = "<DELETE>"
		case r.Offset.Metadata == "":
			vs = fmt.Sprintf("offset=%d", r.Offset.Offset)
		default:
			vs = fmt.Sprintf("offset=%d,metadata=%s", r.Offset.Offset, r.Offset.Metadata)
		}
	default:
		ks = "group_metadata::group=" + r.Group
		if r.Value == nil {
			vs = "<DELETE>"
		} else {
			vs = groupMetadataSummary(r.Value)
		}
	}
	return &ks, &vs, nil
}

// groupMetadataSummary is parseGroupMetadata's JSON: protocolType, protocol, generationId and
// the members' assignments ("{member=[t-0, t-1]:USERDATAHEX,...}" for the consumer protocol,
// "{member=ASSIGNMENTHEX}" otherwise). Members are in record order (Kafka: its hash map's). An
// assignment the consumer protocol cannot read is printed as hex instead of failing.
func groupMetadataSummary(g *kmsg.GroupMetadataValue) string {
	members := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		s := m.MemberID + "=" + javaHex(m.Assignment)
		if g.ProtocolType == "consumer" {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(m.Assignment); err == nil {
				var tps []string
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						tps = append(tps, fmt.Sprintf("%s-%d", t.Topic, p))
					}
				}
				s = m.MemberID + "=[" + strings.Join(tps, ", ") + "]"
				if ud := javaHex(a.UserData); ud != "" {
					s += ":" + ud
				}
			}
		}
		members = append(members, s)
	}
	var b strings.Builder
	b.WriteString(`{"protocolType":`)
	b.WriteString(jsonString(g.ProtocolType))
	b.WriteString(`,"protocol":`)
	if g.Protocol == nil {
		b.WriteString("null")
	} else {
		b.WriteString(jsonString(*g.Protocol))
	}
	fmt.Fprintf(&b, `,"generationId":%d,"assignment":%s}`, g.Generation, jsonString("{"+strings.Join(members, ",")+"}"))
	return b.String()
}

// javaHex is GroupMetadataManager.hex: "%X".format(BigInt(1, bytes)), so leading zero bytes
// vanish; "" for no bytes.
func javaHex(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return strings.ToUpper(new(big.Int).SetBytes(b).Text(16))
}

// jsonString quotes s as Jackson does (no HTML escaping).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// transactionLogMessage is TransactionLog.formatRecordKeyAndValue (Kafka 3.7), the
// --transaction-log-decoder, from coordinator/transaction's decoder, which renders the whole
// "key: ... payload: ..." text: it is split back into key and payload here.
func transactionLogMessage(key, value []byte) (k, v *string, err error) {
	s, err := transaction.DecodeRecord(key, value)
	if err != nil {
		return nil, nil, err
	}
	s = strings.TrimPrefix(s, "key: ")
	// The payload never holds " payload: " (topic names have no spaces); an id might.
	if i := strings.LastIndex(s, " payload: "); i >= 0 {
		ks, vs := s[:i], s[i+len(" payload: "):]
		return &ks, &vs, nil
	}
	return &s, nil, nil
}
