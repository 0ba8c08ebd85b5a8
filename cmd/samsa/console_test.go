package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestLineReader(t *testing.T) {
	type rec struct {
		key, value *string
		headers    []kgo.RecordHeader
	}
	s := func(v string) *string { return &v }
	tests := []struct {
		name    string
		props   map[string]string
		lines   []string
		want    []rec
		wantErr string
	}{
		{"plain", nil, []string{"hello", "a\tb"}, []rec{{nil, s("hello"), nil}, {nil, s("a\tb"), nil}}, ""},
		{"empty line is an empty value", nil, []string{""}, []rec{{nil, s(""), nil}}, ""},
		{"key default tab", map[string]string{"parse.key": "true"}, []string{"k\tv\tw"}, []rec{{s("k"), s("v\tw"), nil}}, ""},
		{"key custom separator", map[string]string{"parse.key": "TRUE", "key.separator": "::"}, []string{"user1::hi::there"}, []rec{{s("user1"), s("hi::there"), nil}}, ""},
		{"missing key separator", map[string]string{"parse.key": "true", "key.separator": ":"}, []string{"a:b", "hhh"}, nil,
			"No key separator found on line number 2: 'hhh'"},
		{"ignore.error keeps line as value", map[string]string{"parse.key": "true", "ignore.error": "true"}, []string{"novalue"}, []rec{{nil, s("novalue"), nil}}, ""},
		{"headers and key", map[string]string{"parse.key": "true", "parse.headers": "true"}, []string{"h1:v1,h2:v2\tk\tv"},
			[]rec{{s("k"), s("v"), []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: []byte("v2")}}}}, ""},
		{"null marker", map[string]string{"parse.key": "true", "null.marker": "<null>"}, []string{"<null>\t<null>"}, []rec{{nil, nil, nil}}, ""},
		{"null header value", map[string]string{"parse.headers": "true", "null.marker": "N"}, []string{"h:N\tv"},
			[]rec{{nil, s("v"), []kgo.RecordHeader{{Key: "h"}}}}, ""},
		{"missing header key separator", map[string]string{"parse.headers": "true"}, []string{"key[MISSING-DELIMITER]val\tvalue0"}, nil,
			"No header key separator found in pair 'key[MISSING-DELIMITER]val' on line number 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := newLineReader("t", tt.props)
			if err != nil {
				t.Fatal(err)
			}
			var got []rec
			for _, line := range tt.lines {
				kr, err := r.record(line)
				if err != nil {
					if tt.wantErr == "" || err.Error() != tt.wantErr {
						t.Fatalf("err %q, want %q", err, tt.wantErr)
					}
					return
				}
				var g rec
				if kr.Key != nil {
					g.key = s(string(kr.Key))
				}
				if kr.Value != nil {
					g.value = s(string(kr.Value))
				}
				g.headers = kr.Headers
				if kr.Topic != "t" {
					t.Fatalf("topic %q", kr.Topic)
				}
				got = append(got, g)
			}
			if tt.wantErr != "" {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v want %+v", got, tt.want)
			}
		})
	}
	for _, bad := range []map[string]string{
		{"headers.delimiter": ",", "headers.separator": ","},
		{"headers.separator": ":"},
		{"null.marker": "\t"},
	} {
		if _, err := newLineReader("t", bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestReadLine(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("a\r\nb\rc\n\nlast"))
	var got []string
	for {
		l, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if want := []string{"a", "b", "c", "", "last"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestParseProducerArgs(t *testing.T) {
	o, _, err := parseProducerArgs([]string{"--bootstrap-server", "h:9092", "--topic", "t", "--property", "parse.key=true", "--property", "key.separator=:"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.acks != "-1" || o.lingerMs != 1000 || o.requestTimeoutMs != 1500 || o.retries != 3 || o.compression != "none" || o.sync ||
		!reflect.DeepEqual(o.readerProps, map[string]string{"parse.key": "true", "key.separator": ":"}) {
		t.Fatalf("defaults: %+v", o)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--bootstrap-server", "h:9092"}, "topic"},
		{[]string{"--topic", "t"}, "bootstrap-server"},
		{[]string{"--topic", "t", "--bootstrap-server", "nohost"}, "host:port"},
		{[]string{"--topic", "t", "--bootstrap-server", "h:1", "--property", "noequals"}, "key=value"},
	} {
		if _, _, err := parseProducerArgs(tt.args, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err %v, want %q", tt.args, err, tt.want)
		}
	}
	o, _, err = parseProducerArgs([]string{"--broker-list", "h:1", "--topic", "t", "--request-required-acks", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := producerClientOpts(o); err == nil || !strings.Contains(err.Error(), "acks") {
		t.Fatalf("acks=2 accepted: %v", err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--compression-codec"}, "gzip"},
		{[]string{"--compression-codec", "--sync"}, "gzip"},
		{[]string{"--compression-codec", "zstd"}, "zstd"},
		{[]string{"--compression-codec=lz4"}, "lz4"},
		{nil, "none"},
	} {
		o, _, err := parseProducerArgs(append([]string{"--bootstrap-server", "h:1", "--topic", "t"}, tt.args...), io.Discard)
		if err != nil || o.compression != tt.want {
			t.Errorf("%v: %v %v, want %s", tt.args, o, err, tt.want)
		}
	}
}

func TestParseConsumerArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o *consumerOpts)
	}{
		{"topic from beginning", []string{"--bootstrap-server", "h:1", "--topic", "t", "--from-beginning", "--max-messages", "10", "--property", "print.key=true"}, "",
			func(t *testing.T, o *consumerOpts) {
				if o.offset != offsetEarliest || o.maxMessages != 10 || !o.format.printKey || o.hasPartition {
					t.Fatalf("%+v", o)
				}
			}},
		{"partition default latest", []string{"--bootstrap-server", "h:1", "--topic", "t", "--partition", "2"}, "",
			func(t *testing.T, o *consumerOpts) {
				if !o.hasPartition || o.partition != 2 || o.offset != offsetLatest || o.maxMessages != -1 {
					t.Fatalf("%+v", o)
				}
			}},
		{"partition offset", []string{"--bootstrap-server", "h:1", "--topic", "t", "--partition", "0", "--offset", "42"}, "",
			func(t *testing.T, o *consumerOpts) {
				if o.offset != 42 {
					t.Fatalf("%+v", o)
				}
			}},
		{"offset earliest", []string{"--bootstrap-server", "h:1", "--topic", "t", "--partition", "0", "--offset", "EARLIEST"}, "",
			func(t *testing.T, o *consumerOpts) {
				if o.offset != offsetEarliest {
					t.Fatalf("%+v", o)
				}
			}},
		{"no topic", []string{"--bootstrap-server", "h:1"}, "Exactly one of --include/--topic is required", nil},
		{"topic and include", []string{"--bootstrap-server", "h:1", "--topic", "a", "--include", "b"}, "Exactly one of --include/--topic", nil},
		{"offset without partition", []string{"--bootstrap-server", "h:1", "--topic", "t", "--offset", "1"}, "The partition is required when offset is specified.", nil},
		{"from-beginning and offset", []string{"--bootstrap-server", "h:1", "--topic", "t", "--partition", "0", "--offset", "1", "--from-beginning"}, "Options from-beginning and offset cannot be specified together.", nil},
		{"negative offset", []string{"--bootstrap-server", "h:1", "--topic", "t", "--partition", "0", "--offset", "-3"}, "The provided offset value '-3' is incorrect.", nil},
		{"group and partition", []string{"--bootstrap-server", "h:1", "--topic", "t", "--partition", "0", "--group", "g"}, "Options group and partition cannot be specified together.", nil},
		{"no bootstrap", []string{"--topic", "t"}, "bootstrap-server", nil},
		{"conflicting reset", []string{"--bootstrap-server", "h:1", "--topic", "t", "--from-beginning", "--consumer-property", "auto.offset.reset=latest"}, "from-beginning", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _, err := parseConsumerArgs(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

func TestMessageFormat(t *testing.T) {
	r := &kgo.Record{Topic: "t", Partition: 3, Offset: 17, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1700000000123),
		Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("a")}, {Key: "h2"}}}
	noKey := &kgo.Record{Value: []byte("v"), Timestamp: time.UnixMilli(5)}
	tests := []struct {
		name  string
		props map[string]string
		r     *kgo.Record
		want  string
	}{
		{"value only", nil, r, "v\n"},
		{"key", map[string]string{"print.key": "true"}, r, "k\tv\n"},
		{"null key", map[string]string{"print.key": "true"}, noKey, "null\tv\n"},
		{"custom separators and null literal", map[string]string{"print.key": "true", "key.separator": " => ", "null.literal": "-", "line.separator": "|"}, noKey, "- => v|"},
		{"everything", map[string]string{"print.timestamp": "true", "print.partition": "true", "print.offset": "true", "print.headers": "true", "print.key": "true"}, r,
			"CreateTime:1700000000123\tPartition:3\tOffset:17\th1:a,h2:null\tk\tv\n"},
		{"no headers", map[string]string{"print.headers": "true"}, noKey, "NO_HEADERS\tv\n"},
		{"key without value", map[string]string{"print.key": "true", "print.value": "false"}, r, "k\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := newMessageFormat(tt.props).write(&b, tt.r); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Fatalf("got %q want %q", b.String(), tt.want)
			}
		})
	}
}

// TestConsoleRoundTrip produces stdin lines with console-producer and reads them back with
// console-consumer, against franz-go's in-memory Kafka.
func TestConsoleRoundTrip(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "lines"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]

	var errb bytes.Buffer
	in := strings.NewReader("k1:first\nk2:second\r\nk1:third\n")
	if code := runConsoleProducer([]string{"--bootstrap-server", bs, "--topic", "lines", "--property", "parse.key=true", "--property", "key.separator=:"}, in, io.Discard, &errb); code != 0 {
		t.Fatalf("producer exit %d: %s", code, errb.String())
	}
	errb.Reset()
	in = strings.NewReader("ok:1\nbad line\nnever:2\n")
	if code := runConsoleProducer([]string{"--bootstrap-server", bs, "--topic", "lines", "--property", "parse.key=true", "--property", "key.separator=:", "--sync"}, in, io.Discard, &errb); code != 1 ||
		!strings.Contains(errb.String(), "No key separator found on line number 2: 'bad line'") {
		t.Fatalf("producer bad line: exit %d: %q", code, errb.String())
	}

	var out bytes.Buffer
	errb.Reset()
	code := runConsoleConsumer([]string{"--bootstrap-server", bs, "--topic", "lines", "--from-beginning", "--max-messages", "4", "--property", "print.key=true", "--property", "key.separator=="}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("consumer exit %d: %s", code, errb.String())
	}
	if errb.String() != "Processed a total of 4 messages\n" {
		t.Fatalf("stderr %q", errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// Per key (= per partition), order is kept.
	var k1 []string
	got := map[string]bool{}
	for _, l := range lines {
		got[l] = true
		if strings.HasPrefix(l, "k1=") {
			k1 = append(k1, l)
		}
	}
	if len(lines) != 4 || !got["k2=second"] || !got["ok=1"] || !reflect.DeepEqual(k1, []string{"k1=first", "k1=third"}) {
		t.Fatalf("consumed %q", lines)
	}

	// Each partition from an offset, with a timeout instead of a count: 4 records in all.
	total := 0
	for _, p := range []string{"0", "1"} {
		out.Reset()
		errb.Reset()
		code = runConsoleConsumer([]string{"--bootstrap-server", bs, "--topic", "lines", "--partition", p, "--offset", "earliest", "--timeout-ms", "1000", "--property", "print.offset=true"}, nil, &out, &errb)
		if code != 0 || !strings.Contains(errb.String(), "Processed a total of") {
			t.Fatalf("partition %s consumer: %d %q %q", p, code, out.String(), errb.String())
		}
		if out.Len() > 0 {
			if !strings.HasPrefix(out.String(), "Offset:0\t") {
				t.Fatalf("partition %s: %q", p, out.String())
			}
			total += strings.Count(out.String(), "\n")
		}
	}
	if total != 4 {
		t.Fatalf("partitions hold %d records, want 4", total)
	}
}

func TestConsumeStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := &consumerOpts{maxMessages: -1, timeoutMs: -1, format: newMessageFormat(nil)}
	n, err := consume(ctx, pollerFunc(func(ctx context.Context) kgo.Fetches { <-ctx.Done(); return nil }), o, bufio.NewWriter(io.Discard), io.Discard)
	if n != 0 || err != nil {
		t.Fatal(n, err)
	}
}

type pollerFunc func(ctx context.Context) kgo.Fetches

func (f pollerFunc) PollFetches(ctx context.Context) kgo.Fetches { return f(ctx) }

// TestConsoleConsumerGroup: with --group, a second consumer continues where the first one's
// printed records end (only printed records are committed).
func TestConsoleConsumerGroup(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "g"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	if code := runConsoleProducer([]string{"--bootstrap-server", bs, "--topic", "g"}, strings.NewReader("1\n2\n3\n4\n"), io.Discard, io.Discard); code != 0 {
		t.Fatalf("producer exit %d", code)
	}
	var out1, out2, errb bytes.Buffer
	if code := runConsoleConsumer([]string{"--bootstrap-server", bs, "--topic", "g", "--group", "grp", "--from-beginning", "--max-messages", "2"}, nil, &out1, &errb); code != 0 {
		t.Fatalf("first consumer exit %d: %s", code, errb.String())
	}
	if code := runConsoleConsumer([]string{"--bootstrap-server", bs, "--topic", "g", "--group", "grp", "--max-messages", "2"}, nil, &out2, &errb); code != 0 {
		t.Fatalf("second consumer exit %d: %s", code, errb.String())
	}
	if out1.String() != "1\n2\n" || out2.String() != "3\n4\n" {
		t.Fatalf("first %q second %q", out1.String(), out2.String())
	}
}
