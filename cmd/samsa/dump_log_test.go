package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

func strOrNil(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestParseDumpLogDecoders(t *testing.T) {
	for _, flagName := range []string{"--offsets-decoder", "--transaction-log-decoder"} {
		o, _, err := parseDumpLogArgs([]string{"--files", "a.log", flagName}, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", flagName, err)
		}
		if o.Parser == nil || !o.PrintDataLog || !o.DeepIteration {
			t.Fatalf("%s must set the parser and imply --print-data-log and deep iteration: %+v", flagName, o)
		}
	}
	// DumpLogSegmentsOptions.messageParser checks the offsets decoder first.
	o, _, err := parseDumpLogArgs([]string{"--files", "a.log", "--transaction-log-decoder", "--offsets-decoder"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	k, _, _ := o.Parser(group.GroupMetadataKey("g"), nil)
	if strOrNil(k) != "group_metadata::group=g" {
		t.Fatalf("both decoders: key %q, want the offsets decoder's", strOrNil(k))
	}
}

func consumerAssignment(userData []byte, topics ...kmsg.ConsumerMemberAssignmentTopic) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version, a.Topics, a.UserData = 0, topics, userData
	return a.AppendTo(nil)
}

func TestOffsetsMessage(t *testing.T) {
	protocol := "range"
	g := kmsg.NewGroupMetadataValue()
	g.ProtocolType, g.Generation, g.Protocol = "consumer", 3, &protocol
	m1 := kmsg.NewGroupMetadataValueMember()
	m1.MemberID = "m1"
	m1.Assignment = consumerAssignment(nil, kmsg.ConsumerMemberAssignmentTopic{Topic: "t", Partitions: []int32{0, 1}})
	m2 := kmsg.NewGroupMetadataValueMember()
	m2.MemberID = "m2"
	m2.Assignment = consumerAssignment([]byte{0x00, 0x0a, 0xbc}, kmsg.ConsumerMemberAssignmentTopic{Topic: "u", Partitions: []int32{2}})
	g.Members = []kmsg.GroupMetadataValueMember{m1, m2}

	other := kmsg.NewGroupMetadataValue()
	other.ProtocolType, other.Generation = "connect", 1
	om := kmsg.NewGroupMetadataValueMember()
	om.MemberID, om.Assignment = "w", []byte{0x01, 0xff}
	other.Members = []kmsg.GroupMetadataValueMember{om}

	unknownKey := []byte{0, 5, 0, 1, 'x'}
	tests := []struct {
		name       string
		key, value []byte
		wantK      string
		wantV      string
	}{
		{"offset commit", group.OffsetCommitKey("grp", group.TopicPartition{Topic: "orders", Partition: 4}),
			group.OffsetCommitValue(group.OffsetAndMetadata{Offset: 17, LeaderEpoch: 2, ExpireTimestamp: -1}),
			"offset_commit::group=grp,partition=orders-4", "offset=17"},
		{"offset commit with metadata", group.OffsetCommitKey("grp", group.TopicPartition{Topic: "orders", Partition: 4}),
			group.OffsetCommitValue(group.OffsetAndMetadata{Offset: 18, Metadata: "m d", ExpireTimestamp: -1}),
			"offset_commit::group=grp,partition=orders-4", "offset=18,metadata=m d"},
		{"offset tombstone", group.OffsetCommitKey("grp", group.TopicPartition{Topic: "orders", Partition: 4}), nil,
			"offset_commit::group=grp,partition=orders-4", "<DELETE>"},
		{"consumer group", group.GroupMetadataKey("grp"), group.GroupMetadataValue(&g),
			"group_metadata::group=grp", `{"protocolType":"consumer","protocol":"range","generationId":3,"assignment":"{m1=[t-0, t-1],m2=[u-2]:ABC}"}`},
		{"other protocol", group.GroupMetadataKey("conn"), group.GroupMetadataValue(&other),
			"group_metadata::group=conn", `{"protocolType":"connect","protocol":null,"generationId":1,"assignment":"{w=1FF}"}`},
		{"group tombstone", group.GroupMetadataKey("grp"), nil, "group_metadata::group=grp", "<DELETE>"},
		{"unknown key version", unknownKey, []byte{1}, "unknown::version=5", "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, v, err := offsetsMessage(tt.key, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if strOrNil(k) != tt.wantK || strOrNil(v) != tt.wantV {
				t.Fatalf("got key %q payload %q\nwant key %q payload %q", strOrNil(k), strOrNil(v), tt.wantK, tt.wantV)
			}
		})
	}
	if _, _, err := offsetsMessage(nil, []byte{1}); err == nil || !strings.Contains(err.Error(), "message had a missing key") {
		t.Fatalf("missing key: %v", err)
	}
	if javaHex([]byte{0, 0}) != "0" || javaHex(nil) != "" || javaHex([]byte{0x0f, 0xa0}) != "FA0" {
		t.Fatalf("javaHex: %q %q %q", javaHex([]byte{0, 0}), javaHex(nil), javaHex([]byte{0x0f, 0xa0}))
	}
}

func txnLogRecord(id string, state kmsg.TransactionState, topics map[string][]int32) (key, value []byte) {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = id
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 1000, 2, 60000, state
	v.LastUpdateTimestamp, v.StartTimestamp = 1700000000123, 1700000000000
	for topic, ps := range topics {
		vt := kmsg.NewTxnMetadataValueTopic()
		vt.Topic, vt.Partitions = topic, ps
		v.Topics = append(v.Topics, vt)
	}
	return k.AppendTo(nil), v.AppendTo(nil)
}

func TestTransactionLogMessage(t *testing.T) {
	key, value := txnLogRecord("tx-1", 1, map[string][]int32{"t": {1, 0}}) // Ongoing
	k, v, err := transactionLogMessage(key, value)
	if err != nil {
		t.Fatal(err)
	}
	if strOrNil(k) != "transaction_metadata::transactionalId=tx-1" ||
		strOrNil(v) != "producerId:1000,producerEpoch:2,state=Ongoing,partitions=[t-0,t-1],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000" {
		t.Fatalf("got key %q payload %q", strOrNil(k), strOrNil(v))
	}
	k, v, err = transactionLogMessage(key, nil)
	if err != nil || strOrNil(k) != "transaction_metadata::transactionalId=tx-1" || strOrNil(v) != "<DELETE>" {
		t.Fatalf("tombstone: %q %q %v", strOrNil(k), strOrNil(v), err)
	}
	k, v, err = transactionLogMessage([]byte{0, 7, 0, 0}, value)
	if err != nil || strOrNil(k) != "unknown::version=7" || v != nil {
		t.Fatalf("unknown key: %q %q %v", strOrNil(k), strOrNil(v), err)
	}
}

// TestDumpLogWithDecoders dumps a segment holding __consumer_offsets records and one holding
// __transaction_state records through the decoders, as kafka-dump-log.sh prints them.
func TestDumpLogWithDecoders(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, recs []recordbatch.Record) string {
		t.Helper()
		h := recordbatch.Header{LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: 1700000000000, MaxTimestamp: 1700000000000,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		b, err := recordbatch.Build(h, recs, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(sub, "00000000000000000000.log")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	offsets := write("__consumer_offsets-0", []recordbatch.Record{
		{OffsetDelta: 0, Key: group.OffsetCommitKey("g", group.TopicPartition{Topic: "t", Partition: 0}),
			Value: group.OffsetCommitValue(group.OffsetAndMetadata{Offset: 5, LeaderEpoch: -1, ExpireTimestamp: -1})},
		{OffsetDelta: 1, Key: group.OffsetCommitKey("g", group.TopicPartition{Topic: "t", Partition: 0})},
	})
	key, value := txnLogRecord("tx", 0, nil) // Empty
	txns := write("__transaction_state-0", []recordbatch.Record{{OffsetDelta: 0, Key: key, Value: value}})

	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runDumpLog(args, nil, &out, &errb); code != 0 {
			t.Fatalf("dump-log %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	out := run("--files", offsets, "--offsets-decoder")
	for _, want := range []string{
		"| offset: 0 CreateTime: 1700000000000 keySize: 12 valueSize: 24 sequence: -1 headerKeys: [] key: offset_commit::group=g,partition=t-0 payload: offset=5\n",
		"| offset: 1 CreateTime: 1700000000000 keySize: 12 valueSize: -1 sequence: -1 headerKeys: [] key: offset_commit::group=g,partition=t-0 payload: <DELETE>\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--offsets-decoder output lacks\n%q\n%s", want, out)
		}
	}
	out = run("--files", offsets, "--offsets-decoder", "--skip-record-metadata")
	if !strings.Contains(out, "| key: offset_commit::group=g,partition=t-0 payload: offset=5\n") {
		t.Errorf("--skip-record-metadata: %s", out)
	}
	out = run("--files", txns, "--transaction-log-decoder")
	if want := " key: transaction_metadata::transactionalId=tx payload: producerId:1000,producerEpoch:2,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000\n"; !strings.Contains(out, want) {
		t.Errorf("--transaction-log-decoder output lacks\n%q\n%s", want, out)
	}
}
