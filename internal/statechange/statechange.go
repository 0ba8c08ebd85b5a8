// Package statechange is samsa's counterpart of Kafka's state-change log: the
// "state.change.logger" that KafkaController, the Partition and Replica state machines and
// ReplicaManager log partition and replica state transitions to, which Kafka's
// log4j.properties sends to its own file, state-change.log.
//
// samsa logs those transitions through logrus with component=state.change. A Log is a
// logrus hook that copies those entries, as they are logged, to a separate file (optional)
// and keeps the last ones in memory for the internals view's live tail.
package statechange

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Component is the logrus "component" field of state-change entries.
const Component = "state.change"

// DefaultKeep is how many entries a Log keeps in memory when Options.Keep is 0.
const DefaultKeep = 500

// Options configure a Log.
type Options struct {
	// File is the state-change log file, appended to; "" writes no file (the tail is kept).
	File string
	// Keep bounds the entries kept in memory; 0 = DefaultKeep.
	Keep int
	// JSON writes the file's lines as JSON objects (samsa.log.format=json), else as text.
	JSON bool
	// Broker, when set (fields["broker"] as printed by fmt), keeps only that broker's
	// entries: brokers started in one process (tests) may share a logger.
	Broker string
	// Enabled says whether an entry at a level passes the state.change logger's level (the
	// broker's per-logger levels); nil lets every level through.
	Enabled func(logrus.Level) bool
}

// Entry is one state-change log entry.
type Entry struct {
	Seq     uint64    `json:"seq"` // 1, 2, … in the order logged
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
	Topic   string    `json:"topic,omitempty"`
	// Partition is the entry's partition field, when it has one (with Topic, or a topic id).
	Partition *int32            `json:"partition,omitempty"`
	Fields    map[string]string `json:"fields,omitempty"` // every other field, printed with %v
	Line      string            `json:"line"`             // the line as written to the file
}

// Log copies state-change entries to a file and keeps the last ones. Safe for concurrent use.
type Log struct {
	opts   Options
	format logrus.Formatter

	mu     sync.Mutex
	file   *os.File // nil: no file
	ring   []Entry  // the last Keep entries, oldest first once full (start marks the oldest)
	start  int
	seq    uint64
	closed bool
	logger *logrus.Logger // the logger the hook is attached to, nil if none
	werr   error          // first write error, reported once
}

// Open creates a Log; with a file, the file (and its directory) is created if missing and
// appended to. An error names the file.
func Open(opts Options) (*Log, error) {
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	l := &Log{opts: opts}
	if opts.JSON {
		l.format = &logrus.JSONFormatter{}
	} else {
		l.format = &logrus.TextFormatter{DisableColors: true, FullTimestamp: true, TimestampFormat: "2006-01-02 15:04:05.000"}
	}
	if opts.File != "" {
		if err := os.MkdirAll(filepath.Dir(opts.File), 0o755); err != nil {
			return nil, fmt.Errorf("state-change log file %s: %w", opts.File, err)
		}
		f, err := os.OpenFile(opts.File, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("state-change log file %s: %w", opts.File, err)
		}
		l.file = f
	}
	return l, nil
}

// hookMu serializes attaching and detaching hooks (logrus has no RemoveHook).
var hookMu sync.Mutex

// Attach hooks the Log to logger: from now on its state-change entries are copied.
func (l *Log) Attach(logger *logrus.Logger) {
	hookMu.Lock()
	defer hookMu.Unlock()
	l.mu.Lock()
	l.logger = logger
	l.mu.Unlock()
	logger.AddHook(l)
}

// Close detaches the hook and closes the file. Entries logged afterwards are dropped.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	logger, f := l.logger, l.file
	l.file = nil
	l.mu.Unlock()
	if logger != nil {
		hookMu.Lock()
		kept := logrus.LevelHooks{}
		for lv, hs := range logger.Hooks {
			for _, h := range hs {
				if h != logrus.Hook(l) {
					kept[lv] = append(kept[lv], h)
				}
			}
		}
		logger.ReplaceHooks(kept)
		hookMu.Unlock()
	}
	if f != nil {
		return f.Close()
	}
	return nil
}

// Levels is every level: the state.change logger's own level decides (Options.Enabled).
func (l *Log) Levels() []logrus.Level { return logrus.AllLevels }

// Fire copies e when it is a state-change entry of this Log's broker. It never fails the
// log call: a write error is reported once on stderr and the tail goes on.
func (l *Log) Fire(e *logrus.Entry) error {
	if c, _ := e.Data["component"].(string); c != Component {
		return nil
	}
	if l.opts.Broker != "" && fmt.Sprint(e.Data["broker"]) != l.opts.Broker {
		return nil
	}
	if l.opts.Enabled != nil && !l.opts.Enabled(e.Level) {
		return nil
	}
	en := Entry{Time: e.Time, Level: e.Level.String(), Message: e.Message, Fields: map[string]string{}}
	for k, v := range e.Data {
		switch k {
		case "component":
		case "topic":
			en.Topic = fmt.Sprint(v)
		case "partition":
			if p, err := strconv.ParseInt(fmt.Sprint(v), 10, 32); err == nil {
				p32 := int32(p)
				en.Partition = &p32
			} else {
				en.Fields[k] = fmt.Sprint(v)
			}
		default:
			en.Fields[k] = fmt.Sprint(v)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	// The formatter runs under l.mu: logrus' formatters are not meant for concurrent use.
	line, err := l.format.Format(e)
	if err != nil {
		return nil
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		en.Line = string(line[:n-1])
	} else {
		en.Line = string(line)
		line = append(line, '\n')
	}
	if l.file != nil {
		if _, err := l.file.Write(line); err != nil && l.werr == nil {
			l.werr = err
			fmt.Fprintf(os.Stderr, "samsa: cannot write the state-change log %s: %v\n", l.opts.File, err)
		}
	}
	l.seq++
	en.Seq = l.seq
	if len(l.ring) < l.opts.Keep {
		l.ring = append(l.ring, en)
	} else {
		l.ring[l.start] = en
		l.start = (l.start + 1) % len(l.ring)
	}
	return nil
}

// Tail returns the kept entries, oldest first, those about topic only when topic is not
// "", at most limit of the newest (limit <= 0: all kept).
func (l *Log) Tail(topic string, limit int) []Entry {
	l.mu.Lock()
	out := make([]Entry, 0, len(l.ring))
	for i := range l.ring {
		en := l.ring[(l.start+i)%len(l.ring)]
		if topic == "" || en.Topic == topic {
			out = append(out, en)
		}
	}
	l.mu.Unlock()
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// Topics returns the topics of the kept entries, sorted (for the page's filter links).
func (l *Log) Topics() []string {
	l.mu.Lock()
	seen := map[string]bool{}
	for _, en := range l.ring {
		if en.Topic != "" {
			seen[en.Topic] = true
		}
	}
	l.mu.Unlock()
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// File is the state-change log file, "" when none is written.
func (l *Log) File() string { return l.opts.File }

// Keep is how many entries the tail keeps.
func (l *Log) Keep() int { return l.opts.Keep }
