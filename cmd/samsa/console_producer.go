package main

// console-producer mirrors Kafka 3.7's kafka-console-producer.sh (kafka.tools.ConsoleProducer
// and its LineMessageReader): flags, defaults and line parsing, over a franz-go producer.
//
// Idempotence is on by default, as in Kafka 3.x producers; like them, an acks other than all
// turns it off unless enable.idempotence=true was given explicitly (then kgo refuses).

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type producerOpts struct {
	bootstrap        string
	topic            string
	sync             bool
	compression      string
	acks             string
	lingerMs         int64
	requestTimeoutMs int64
	retries          int64
	retryBackoffMs   int64
	metadataExpiryMs int64
	readerProps      map[string]string
	producerProps    map[string]string
	security         []kgo.Opt // from producerProps' security settings
}

func parseProducerArgs(args []string, stderr io.Writer) (*producerOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa console-producer", stderr)
	var topic, bootstrap, brokerList, compression, lineReader, readerConfig, producerConfig optString
	var props, producerProps multiFlag
	o := &producerOpts{}
	fs.Var(&topic, "topic", "REQUIRED: The topic id to produce messages to.")
	fs.Var(&bootstrap, "bootstrap-server", "REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to.")
	fs.Var(&brokerList, "broker-list", "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.")
	fs.BoolVar(&o.sync, "sync", false, "If set message send requests to the brokers are synchronously, one at a time as they arrive.")
	fs.Var(&compression, "compression-codec", "The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'.")
	batchSize := fs.Int64("batch-size", 16*1024, "Number of messages to send in a single batch (accepted; franz-go sizes batches itself).")
	fs.Int64Var(&o.retries, "message-send-max-retries", 3, "The number of retries before the producer gives up and drops this message.")
	fs.Int64Var(&o.retryBackoffMs, "retry-backoff-ms", 100, "The amount of time that the producer waits before refreshing the metadata before a retry.")
	fs.Int64Var(&o.lingerMs, "timeout", 1000, "The maximum amount of time a message will queue awaiting sufficient batch size (linger.ms).")
	fs.StringVar(&o.acks, "request-required-acks", "-1", "The required `acks` of the producer requests")
	fs.Int64Var(&o.requestTimeoutMs, "request-timeout-ms", 1500, "The ack timeout of the producer requests. Value must be non-negative and non-zero.")
	fs.Int64Var(&o.metadataExpiryMs, "metadata-expiry-ms", 5*60*1000, "The period of time in milliseconds after which we force a refresh of metadata.")
	fs.Int64("max-block-ms", 60*1000, "The max time that the producer will block for during a send request (accepted).")
	fs.Int64("max-memory-bytes", 32*1024*1024, "The total memory used by the producer to buffer records (accepted).")
	fs.Int64("max-partition-memory-bytes", 16*1024, "The buffer size allocated for a partition (accepted).")
	fs.Int64("socket-buffer-size", 1024*100, "The size of the tcp RECV size (accepted).")
	fs.Var(&lineReader, "line-reader", "The class name of the class to use for reading lines from standard in (only the default is supported).")
	fs.Var(&props, "property", "A property for the message reader: parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator, ignore.error, null.marker (repeatable).")
	fs.Var(&readerConfig, "reader-config", "Config properties file for the message reader. Note that --property takes precedence over this config.")
	fs.Var(&producerProps, "producer-property", "A mechanism to pass user-defined properties in the form key=value to the producer (repeatable).")
	fs.Var(&producerConfig, "producer.config", "Producer config properties file. Note that --producer-property takes precedence over this config.")
	_ = batchSize
	if err := parseFlags(fs, optionalArg(args, "compression-codec")); err != nil {
		return nil, fs, err
	}
	if !topic.set {
		return nil, fs, usageErr("Missing required argument \"[topic]\"")
	}
	o.topic = topic.v
	o.bootstrap = bootstrap.v
	if !bootstrap.set {
		o.bootstrap = brokerList.v
	}
	if o.bootstrap == "" {
		return nil, fs, usageErr("Missing required option(s) [bootstrap-server]")
	}
	if err := validatePorts(o.bootstrap); err != nil {
		return nil, fs, err
	}
	o.compression = "none"
	if compression.set {
		o.compression = compression.v
		if o.compression == "" {
			o.compression = "gzip"
		}
	}
	if lineReader.set && lineReader.v != "kafka.tools.ConsoleProducer$LineMessageReader" && lineReader.v != "org.apache.kafka.tools.LineMessageReader" {
		return nil, fs, usageErr("--line-reader %s is not supported; only the default LineMessageReader is", lineReader.v)
	}
	var err error
	if o.readerProps, err = propsFileThenArgs(readerConfig, props); err != nil {
		return nil, fs, err
	}
	if o.producerProps, err = propsFileThenArgs(producerConfig, producerProps); err != nil {
		return nil, fs, err
	}
	return o, fs, nil
}

// optionalArg lets flag name go without a value (joptsimple's withOptionalArg): a bare
// --name followed by another flag or nothing becomes --name= .
func optionalArg(args []string, name string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a != "-"+name && a != "--"+name {
			continue
		}
		if i+1 == len(out) || strings.HasPrefix(out[i+1], "-") {
			out[i] = a + "="
		}
	}
	return out
}

// validatePorts is ToolsUtils.validatePortOrDie: every host:port must have a numeric port.
func validatePorts(hostPorts string) error {
	re := regexp.MustCompile(`^.*:[0-9]+$`)
	for _, hp := range strings.Split(hostPorts, ",") {
		if !re.MatchString(strings.TrimSpace(hp)) {
			return usageErr("Please provide valid host:port like host1:9091,host2:9092\n ")
		}
	}
	return nil
}

// lineReader is Kafka's LineMessageReader: one record per line, optionally
// "headers<delim>key<sep>value".
type lineReader struct {
	topic                                            string
	parseKey, parseHeaders, ignoreError              bool
	keySeparator, headersDelimiter, headersSeparator string
	headersKeySeparator                              string
	nullMarker                                       *string
	headersSeparatorRE                               *regexp.Regexp
	lineNumber                                       int
}

func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

func newLineReader(topic string, props map[string]string) (*lineReader, error) {
	r := &lineReader{topic: topic, keySeparator: "\t", headersDelimiter: "\t", headersSeparator: ",", headersKeySeparator: ":"}
	if v, ok := props["parse.key"]; ok {
		r.parseKey = isTrue(v)
	}
	if v, ok := props["key.separator"]; ok {
		r.keySeparator = v
	}
	if v, ok := props["parse.headers"]; ok {
		r.parseHeaders = isTrue(v)
	}
	if v, ok := props["headers.delimiter"]; ok {
		r.headersDelimiter = v
	}
	if v, ok := props["headers.separator"]; ok {
		r.headersSeparator = v
	}
	// Java splits headers with Pattern.compile(headers.separator).
	re, err := regexp.Compile(r.headersSeparator)
	if err != nil {
		return nil, fmt.Errorf("invalid headers.separator %q: %v", r.headersSeparator, err)
	}
	r.headersSeparatorRE = re
	if v, ok := props["headers.key.separator"]; ok {
		r.headersKeySeparator = v
	}
	if v, ok := props["ignore.error"]; ok {
		r.ignoreError = isTrue(v)
	}
	switch {
	case r.headersDelimiter == r.headersSeparator:
		return nil, errors.New("headers.delimiter and headers.separator may not be equal")
	case r.headersDelimiter == r.headersKeySeparator:
		return nil, errors.New("headers.delimiter and headers.key.separator may not be equal")
	case r.headersSeparator == r.headersKeySeparator:
		return nil, errors.New("headers.separator and headers.key.separator may not be equal")
	}
	if v, ok := props["null.marker"]; ok {
		r.nullMarker = &v
		switch v {
		case r.keySeparator:
			return nil, errors.New("null.marker and key.separator may not be equal")
		case r.headersSeparator:
			return nil, errors.New("null.marker and headers.separator may not be equal")
		case r.headersDelimiter:
			return nil, errors.New("null.marker and headers.delimiter may not be equal")
		case r.headersKeySeparator:
			return nil, errors.New("null.marker and headers.key.separator may not be equal")
		}
	}
	return r, nil
}

func (r *lineReader) isNull(s string) bool { return r.nullMarker != nil && s == *r.nullMarker }

// parseField is LineMessageReader.parse: the text from start up to the demarcation.
func (r *lineReader) parseField(enabled bool, line string, start int, demarcation, name string) (string, bool, error) {
	if !enabled {
		return "", false, nil
	}
	i := strings.Index(line[start:], demarcation)
	if i < 0 {
		if r.ignoreError {
			return "", false, nil
		}
		return "", false, fmt.Errorf("No %s found on line number %d: '%s'", name, r.lineNumber, line)
	}
	return line[start : start+i], true, nil
}

// record parses the next line (without its line terminator) into a record.
func (r *lineReader) record(line string) (*kgo.Record, error) {
	r.lineNumber++
	headers, hasHeaders, err := r.parseField(r.parseHeaders, line, 0, r.headersDelimiter, "headers delimiter")
	if err != nil {
		return nil, err
	}
	headerOffset := 0
	if hasHeaders {
		headerOffset = len(headers) + len(r.headersDelimiter)
	}
	key, hasKey, err := r.parseField(r.parseKey, line, headerOffset, r.keySeparator, "key separator")
	if err != nil {
		return nil, err
	}
	keyOffset := 0
	if hasKey {
		keyOffset = len(key) + len(r.keySeparator)
	}
	value := line[headerOffset+keyOffset:]
	rec := &kgo.Record{Topic: r.topic}
	if hasKey && !r.isNull(key) {
		rec.Key = []byte(key)
	}
	if !r.isNull(value) {
		rec.Value = []byte(value)
	}
	if hasHeaders && !r.isNull(headers) {
		for _, pair := range r.headersSeparatorRE.Split(headers, -1) {
			i := strings.Index(pair, r.headersKeySeparator)
			if i < 0 {
				if !r.ignoreError {
					return nil, fmt.Errorf("No header key separator found in pair '%s' on line number %d", pair, r.lineNumber)
				}
				rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: pair})
				continue
			}
			hk, hv := pair[:i], pair[i+len(r.headersKeySeparator):]
			if r.isNull(hk) {
				return nil, fmt.Errorf("Header keys should not be equal to the null marker '%s' as they can't be null", hk)
			}
			h := kgo.RecordHeader{Key: hk}
			if !r.isNull(hv) {
				h.Value = []byte(hv)
			}
			rec.Headers = append(rec.Headers, h)
		}
	}
	return rec, nil
}

// readLine reads one line as Java's BufferedReader.readLine: "\n", "\r\n" or "\r" end it.
// It returns io.EOF only when nothing was read.
func readLine(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				return b.String(), nil
			}
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				br.ReadByte()
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

func producerClientOpts(o *producerOpts) ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(splitServers(o.bootstrap)...),
		kgo.DefaultProduceTopic(o.topic),
		kgo.ClientID("console-producer"),
		kgo.ProducerLinger(time.Duration(o.lingerMs) * time.Millisecond),
		kgo.ProduceRequestTimeout(time.Duration(o.requestTimeoutMs) * time.Millisecond),
		kgo.RecordRetries(int(o.retries)),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Duration(o.retryBackoffMs) * time.Millisecond }),
		kgo.MetadataMaxAge(time.Duration(o.metadataExpiryMs) * time.Millisecond),
		kgo.RecordDeliveryTimeout(120 * time.Second), // the Java producer's delivery.timeout.ms
		kgo.AllowAutoTopicCreation(),                 // the Java producer's metadata requests allow it
	}
	opts = append(opts, o.security...)
	if id, ok := o.producerProps["client.id"]; ok {
		opts = append(opts, kgo.ClientID(id))
	}
	acks := o.acks
	if v, ok := o.producerProps["acks"]; ok {
		acks = v
	}
	ackAll := false
	switch strings.TrimSpace(strings.ToLower(acks)) {
	case "-1", "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		ackAll = true
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration acks: String must be one of: all, -1, 0, 1", acks)
	}
	// ProducerConfig (Kafka 3.x): idempotence defaults to true but is dropped silently when
	// unset and acks is not all.
	idem, set := o.producerProps["enable.idempotence"]
	if set && !isTrue(idem) || !set && !ackAll {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	switch strings.ToLower(o.compression) {
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration compression.type: String must be one of: none, gzip, snappy, lz4, zstd", o.compression)
	}
	return opts, nil
}

func describeBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Itoa(len(b)) + " bytes"
}

// runConsoleProducer is kafka-console-producer.sh.
func runConsoleProducer(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseProducerArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	reader, err := newLineReader(o.topic, o.readerProps)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	sec, err := clientSecurityOpts(o.producerProps)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR Invalid producer security configuration: %v\n", err)
		return 1
	}
	o.security = sec.opts
	opts, err := producerClientOpts(o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer cl.Close()

	// ErrorLoggingCallback: a failed async send is logged, the producer goes on.
	var mu sync.Mutex
	logSendError := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "ERROR Error when sending message to topic %s with key: %s, value: %s with error: %v\n",
			r.Topic, describeBytes(r.Key), describeBytes(r.Value), err)
	}
	prompt := isTerminal(stdin) && isTerminal(stdout) // Java: System.console != null
	br := bufio.NewReaderSize(stdin, 64*1024)
	ctx := context.Background()
	exit := 0
	for {
		if prompt {
			fmt.Fprint(stdout, ">")
		}
		line, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			exit = 1
			break
		}
		rec, err := reader.record(line)
		if err != nil {
			fmt.Fprintf(stderr, "org.apache.kafka.common.KafkaException: %v\n", err)
			exit = 1
			break
		}
		if o.sync {
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				logSendError(rec, err)
				exit = 1
				break
			}
			continue
		}
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				logSendError(r, err)
			}
		})
	}
	// producer.close(): wait for everything sent so far.
	if err := cl.Flush(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		exit = 1
	}
	return exit
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
