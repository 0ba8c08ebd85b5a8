package logstore

// Manager mirrors Kafka's LogManager (core/src/main/scala/kafka/log/LogManager.scala): it
// owns the log dirs (lock, meta.properties, clean-shutdown marker, root checkpoints), opens
// every partition at start, creates and deletes logs, and runs the background tasks
// (retention, flush, checkpoints, delayed file deletion, cleaner). An I/O error takes the
// whole log dir offline, as Kafka's LogDirFailureChannel does.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// ManagerConfig is what KafkaServer passes to LogManager.
type ManagerConfig struct {
	Dirs      []string // log.dirs
	BrokerID  int32
	ClusterID string // empty: not checked (not known yet)
	// BrokerProps are the broker's log.* keys (topic defaults); see NewLogConfig.
	BrokerProps map[string]string
	// TopicConfig returns a topic's overrides (from /config/topics) for logs found at
	// start; nil means broker defaults only. Kafka reads them from ZooKeeper before loading.
	TopicConfig func(topic string) map[string]string

	RecoveryThreadsPerDir           int           // num.recovery.threads.per.data.dir (1)
	FlushCheckpointInterval         time.Duration // log.flush.offset.checkpoint.interval.ms (60 s)
	StartOffsetCheckpointInterval   time.Duration // log.flush.start.offset.checkpoint.interval.ms (60 s)
	HighWatermarkCheckpointInterval time.Duration // replica.high.watermark.checkpoint.interval.ms (5 s)
	RetentionCheckInterval          time.Duration // log.retention.check.interval.ms (5 min)
	FlushSchedulerInterval          time.Duration // log.flush.scheduler.interval.ms (0 or huge = never)
	// CleanerEnable is log.cleaner.enable (true in Kafka); CleanerBackoff is log.cleaner.backoff.ms (15 s).
	CleanerEnable  bool
	CleanerBackoff time.Duration
	// CleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size (128 MiB): bounds the key map.
	CleanerDedupeBufferSize int64
	// ProducerIDExpiration is producer.id.expiration.ms (1 day): idle producers' state is
	// dropped; ProducerIDExpirationCheckInterval is producer.id.expiration.check.interval.ms
	// (10 min), the period of the expiry task (UnifiedLog's PeriodicProducerExpirationCheck).
	ProducerIDExpiration              time.Duration
	ProducerIDExpirationCheckInterval time.Duration

	FS    FS
	Clock func() time.Time
	Log   *logrus.Entry

	// OnDirOffline is called (from a goroutine the Manager owns) after a log dir went
	// offline. OnAllDirsOffline is then called if no dir is left: Kafka halts the broker
	// ("Shutdown broker because all log dirs ... have failed"); the broker should exit.
	OnDirOffline     func(dir string)
	OnAllDirsOffline func()
}

func (c *ManagerConfig) setDefaults() {
	if c.FS == nil {
		c.FS = OSFS{}
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Log == nil {
		l := logrus.New()
		l.SetOutput(ioDiscard{})
		c.Log = logrus.NewEntry(l)
	}
	if c.RecoveryThreadsPerDir <= 0 {
		c.RecoveryThreadsPerDir = 1
	}
	if c.FlushCheckpointInterval <= 0 {
		c.FlushCheckpointInterval = 60 * time.Second
	}
	if c.StartOffsetCheckpointInterval <= 0 {
		c.StartOffsetCheckpointInterval = 60 * time.Second
	}
	if c.HighWatermarkCheckpointInterval <= 0 {
		c.HighWatermarkCheckpointInterval = 5 * time.Second
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = 5 * time.Minute
	}
	if c.CleanerBackoff <= 0 {
		c.CleanerBackoff = 15 * time.Second
	}
	if c.CleanerDedupeBufferSize <= 0 {
		c.CleanerDedupeBufferSize = 128 << 20
	}
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = DefaultProducerIDExpirationMs * time.Millisecond
	}
	if c.ProducerIDExpirationCheckInterval <= 0 {
		c.ProducerIDExpirationCheckInterval = DefaultProducerIDExpirationCheckIntervalMs * time.Millisecond
	}
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }

// Manager is the LogManager. All methods are safe for concurrent use. Lock order:
// createMu, then a Log's lock, then checkpointMu or mu. mu guards only maps and is never
// held across disk I/O or while taking another lock; createMu is held across a log's
// creation (Kafka's logCreationOrDeletionLock); checkpointMu across one checkpoint write.
type Manager struct {
	cfg   ManagerConfig
	fs    FS
	clock func() time.Time
	log   *logrus.Entry
	dirs  []string // absolute, in config order

	// createMu serializes log creation and deletion (Kafka's logCreationOrDeletionLock).
	createMu sync.Mutex

	mu struct {
		sync.Mutex
		logs     map[TopicPartition]*Log
		logDir   map[TopicPartition]string // tp -> log dir root
		offline  map[string]error          // dir -> the error that took it offline
		locks    map[string]*dirLock
		deletes  []pendingDelete
		cfgCache map[string]LogConfig // topic -> config used at load
		// initializing holds the log creations in progress (LogManager.partitionsInitializing).
		initializing map[*LogInit]struct{}
		shutdown     bool
	}
	cleaner *Cleaner
	dyn     managerDynamic // what dynamic broker configs change (dynamic.go)
	fut     futureState    // future logs of log-dir moves, preferred dirs (future.go)

	// checkpointMu serializes checkpoint file writes: two writers of one file would share
	// its .tmp (Kafka's CheckpointFile.write is synchronized the same way). Nothing on a
	// request path takes it.
	checkpointMu sync.Mutex

	bgCancel context.CancelFunc
	wg       sync.WaitGroup // background tasks and callback goroutines
}

type pendingDelete struct {
	due  time.Time
	what string
	fn   func() error
}

// OpenManager locks every log dir, checks or writes meta.properties, reads the root
// checkpoints and opens every partition in parallel (RecoveryThreadsPerDir per dir).
// A dir held by another process fails with ErrLogDirLocked; a meta.properties mismatch
// fails with ErrMetaMismatch. A dir that fails with an I/O error while loading is taken
// offline; if none is left OpenManager fails with ErrKafkaStorage.
func OpenManager(cfg ManagerConfig) (*Manager, error) {
	cfg.setDefaults()
	if len(cfg.Dirs) == 0 {
		return nil, fmt.Errorf("logstore: no log dirs configured: %w", ErrInvalidConfig)
	}
	if cfg.BrokerID < 0 {
		return nil, fmt.Errorf("logstore: broker id %d not resolved before opening log dirs: %w", cfg.BrokerID, ErrInvalidConfig)
	}
	m := &Manager{cfg: cfg, fs: cfg.FS, clock: cfg.Clock, log: cfg.Log.WithField("component", "log.manager")}
	m.mu.logs = make(map[TopicPartition]*Log)
	m.mu.logDir = make(map[TopicPartition]string)
	m.mu.offline = make(map[string]error)
	m.mu.locks = make(map[string]*dirLock)
	m.mu.cfgCache = make(map[string]LogConfig)
	m.mu.initializing = make(map[*LogInit]struct{})

	seen := make(map[string]bool)
	for _, d := range cfg.Dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("log dir %s: %w", d, err)
		}
		if seen[abs] {
			return nil, fmt.Errorf("duplicate log dir %s: %w", abs, ErrInvalidConfig)
		}
		seen[abs] = true
		m.dirs = append(m.dirs, abs)
	}

	// createAndValidateLogDirs + lockLogDirs: an unusable dir goes offline, a dir locked
	// by someone else is fatal.
	for _, d := range m.dirs {
		if err := m.fs.MkdirAll(d, 0o755); err != nil {
			m.mu.offline[d] = err
			m.log.WithError(err).WithField("dir", d).Error("failed to create or validate data directory")
			continue
		}
		l, err := lockDir(m.fs, d)
		if err != nil {
			m.unlockAll()
			if errors.Is(err, ErrLogDirLocked) {
				return nil, err
			}
			return nil, fmt.Errorf("lock log dir %s: %w", d, err)
		}
		m.mu.locks[d] = l
	}
	if err := checkMetaProperties(m.fs, m.onlineDirsLocked(), cfg.BrokerID, cfg.ClusterID, m.clock()); err != nil {
		m.unlockAll()
		return nil, err
	}

	start := time.Now()
	if err := m.loadLogs(); err != nil {
		m.closeAllQuietly()
		m.unlockAll()
		return nil, err
	}
	if len(m.OnlineDirs()) == 0 {
		m.closeAllQuietly()
		m.unlockAll()
		return nil, fmt.Errorf("logstore: all log dirs %v are offline: %w", m.dirs, ErrKafkaStorage)
	}
	m.cleaner = newCleaner(m)
	m.log.WithFields(logrus.Fields{"logs": len(m.AllLogs()), "elapsed_ms": time.Since(start).Milliseconds()}).Info("logs loaded")
	return m, nil
}

// loadLogs is LogManager.loadLogs: per dir, take the clean-shutdown marker, read the
// checkpoints and open every partition dir with a bounded pool.
func (m *Manager) loadLogs() error {
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		fatal   error
		loadMu  sync.Mutex
		byTP    = make(map[TopicPartition]string)
		results = make(map[string][]*Log)
	)
	for _, dir := range m.OnlineDirs() {
		clean, err := takeCleanShutdownMarker(m.fs, dir)
		if err != nil {
			m.markDirOffline(dir, err)
			continue
		}
		recovery, err1 := ReadOffsetCheckpoint(m.fs, filepath.Join(dir, RecoveryPointCheckpointFile))
		starts, err2 := ReadOffsetCheckpoint(m.fs, filepath.Join(dir, LogStartOffsetCheckpointFile))
		hws, err3 := ReadOffsetCheckpoint(m.fs, filepath.Join(dir, HighWatermarkCheckpointFile))
		if err := errors.Join(err1, err2, err3); err != nil {
			// Kafka: a corrupt checkpoint is logged and treated as empty (full recovery).
			m.log.WithError(err).WithField("dir", dir).Warn("error reading checkpoints, recovering all logs in dir")
			clean = false
			recovery, starts, hws = map[TopicPartition]int64{}, map[TopicPartition]int64{}, map[TopicPartition]int64{}
		}
		entries, err := m.fs.ReadDir(dir)
		if err != nil {
			m.markDirOffline(dir, fmt.Errorf("list %s: %w", dir, err))
			continue
		}
		work := make(chan string, len(entries))
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			name := e.Name()
			path := filepath.Join(dir, name)
			switch {
			case strings.HasSuffix(name, "-delete"):
				m.scheduleDelete(path, m.defaultDeleteDelay(), func() error { return m.fs.RemoveAll(path) })
				continue
			case strings.HasSuffix(name, "-stray"):
				m.log.WithField("dir", path).Warn("ignoring replica directory not supported by samsa")
				continue
			}
			if _, err := ParseTopicPartitionDir(name); err != nil {
				m.log.WithField("dir", path).Warn("ignoring directory that is not a partition")
				continue
			}
			work <- path
		}
		close(work)
		logger := m.log.WithField("dir", dir)
		logger.WithFields(logrus.Fields{"clean_shutdown": clean, "partitions": len(work)}).Info("loading logs")
		for i := 0; i < m.cfg.RecoveryThreadsPerDir; i++ {
			wg.Add(1)
			go func(dir string) {
				defer wg.Done()
				for path := range work {
					if m.isOffline(dir) {
						continue
					}
					tp, _ := ParseTopicPartitionDir(filepath.Base(path))
					opts := m.openOptions(dir, tp, m.configFor(tp.Topic))
					opts.RecoveryPoint = recovery[tp]
					opts.HighWatermark = hws[tp]
					if s, ok := starts[tp]; ok {
						opts.LogStartOffset = s
					} else {
						opts.LogStartOffset = -1
					}
					opts.CleanShutdown = clean
					l, err := OpenLog(path, opts)
					if err != nil {
						if errors.Is(err, ErrKafkaStorage) || isIOError(err) {
							m.markDirOffline(dir, fmt.Errorf("load log %s: %w", path, err))
							continue
						}
						errMu.Lock()
						if fatal == nil {
							fatal = fmt.Errorf("load log %s: %w", path, err)
						}
						errMu.Unlock()
						continue
					}
					if strings.HasSuffix(path, FutureDirSuffix) { // a log-dir move to resume (future.go)
						if err := m.addLoadedFutureLog(dir, l); err != nil {
							errMu.Lock()
							fatal = cmp.Or(fatal, err)
							errMu.Unlock()
							l.Close()
						}
						continue
					}
					loadMu.Lock()
					if other, dup := byTP[tp]; dup {
						errMu.Lock()
						if fatal == nil {
							fatal = fmt.Errorf("logstore: duplicate log directories for %s are found in %s and %s", tp, other, dir)
						}
						errMu.Unlock()
						loadMu.Unlock()
						l.Close()
						continue
					}
					byTP[tp] = dir
					results[dir] = append(results[dir], l)
					loadMu.Unlock()
				}
			}(dir)
		}
	}
	wg.Wait()
	m.mu.Lock()
	for dir, logs := range results {
		if _, off := m.mu.offline[dir]; off {
			for _, l := range logs {
				l.markOffline()
			}
		}
		for _, l := range logs {
			m.mu.logs[l.TopicPartition()] = l
			m.mu.logDir[l.TopicPartition()] = dir
		}
	}
	m.mu.Unlock()
	return fatal
}

// isIOError reports whether err came from the filesystem rather than from log content.
func isIOError(err error) bool {
	var pe *os.PathError
	var le *os.LinkError
	var se *os.SyscallError
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se)
}

func (m *Manager) configFor(topic string) LogConfig {
	m.mu.Lock()
	c, ok := m.mu.cfgCache[topic]
	m.mu.Unlock()
	if ok {
		return c
	}
	var overrides map[string]string
	if m.cfg.TopicConfig != nil {
		overrides = m.cfg.TopicConfig(topic)
	}
	c, err := NewLogConfig(m.BrokerProps(), overrides)
	if err != nil {
		m.log.WithError(err).WithField("topic", topic).Warn("invalid topic config, using broker defaults")
		c, err = NewLogConfig(m.BrokerProps(), nil)
		if err != nil {
			c = DefaultLogConfig()
		}
	}
	m.mu.Lock()
	m.mu.cfgCache[topic] = c
	m.mu.Unlock()
	return c
}

func (m *Manager) defaultDeleteDelay() time.Duration {
	c, err := NewLogConfig(m.BrokerProps(), nil)
	if err != nil {
		c = DefaultLogConfig()
	}
	return time.Duration(c.FileDeleteDelayMs) * time.Millisecond
}

// openOptions fills the options every OpenLog call shares.
func (m *Manager) openOptions(dir string, tp TopicPartition, cfg LogConfig) LogOpenOptions {
	return LogOpenOptions{
		Config: cfg,
		FS:     m.fs,
		Clock:  m.clock,
		Log:    m.cfg.Log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}),
		OnIOError: func(err error) {
			// The failing log calls this holding its own lock and is already offline:
			// mark the others only.
			m.markDirOfflineExcept(dir, err, &tp)
		},
		ScheduleDelete: func(delay time.Duration, fn func()) {
			m.scheduleDelete(tp.String()+" segments", delay, func() error { fn(); return nil })
		},
		ProducerIDExpirationMs:              m.cfg.ProducerIDExpiration.Milliseconds(),
		ProducerIDExpirationCheckIntervalMs: m.cfg.ProducerIDExpirationCheckInterval.Milliseconds(),
		ProducerIDExpirationLive:            &m.dyn.producerIDExpirationMs,
	}
}

// Start runs the background tasks until ctx is done or Shutdown is called.
func (m *Manager) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	if m.mu.shutdown || m.bgCancel != nil {
		m.mu.Unlock()
		cancel()
		return
	}
	m.bgCancel = cancel
	m.mu.Unlock()

	m.every(ctx, "kafka-log-retention", m.cfg.RetentionCheckInterval, func() { m.cleanupLogs() })
	if iv := m.cfg.FlushSchedulerInterval; iv > 0 && iv < time.Duration(math.MaxInt64/2) {
		m.every(ctx, "kafka-log-flusher", iv, func() { m.flushDirtyLogs() })
	}
	m.every(ctx, "kafka-recovery-point-checkpoint", m.cfg.FlushCheckpointInterval, func() { m.checkpointRecoveryPoints() })
	m.every(ctx, "kafka-log-start-offset-checkpoint", m.cfg.StartOffsetCheckpointInterval, func() { m.checkpointLogStartOffsets() })
	m.every(ctx, "highwatermark-checkpoint", m.cfg.HighWatermarkCheckpointInterval, func() { m.checkpointHighWatermarks() })
	m.every(ctx, "kafka-delete-logs", time.Second, func() { m.processDueDeletes() })
	// Kafka schedules this per UnifiedLog; one task over all logs does the same work.
	m.every(ctx, "PeriodicProducerExpirationCheck", m.cfg.ProducerIDExpirationCheckInterval, func() {
		for _, l := range m.AllLogs() {
			l.RemoveExpiredProducers()
		}
	})
	m.startCleaners(ctx) // kafka-log-cleaner-thread-<n>, restarted by ReconfigureCleaner
}

// every runs fn each interval in a goroutine owned by m until ctx is done.
func (m *Manager) every(ctx context.Context, name string, interval time.Duration, fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// GetOrCreateLog returns tp's log, creating it in the online dir with the fewest
// partitions (Kafka's nextLogDirs) if it does not exist. A log that exists keeps its
// config. A topic id that differs from the stored one is an error (InconsistentTopicId).
func (m *Manager) GetOrCreateLog(tp TopicPartition, topicID [16]byte, cfg LogConfig) (*Log, error) {
	if l, dir, ok := m.lookup(tp); ok {
		return m.checkExisting(l, dir, tp, topicID)
	}
	m.createMu.Lock()
	defer m.createMu.Unlock()
	if l, dir, ok := m.lookup(tp); ok {
		return m.checkExisting(l, dir, tp, topicID)
	}
	m.mu.Lock()
	if m.mu.shutdown {
		m.mu.Unlock()
		return nil, fmt.Errorf("create log %s: %w", tp, ErrClosed)
	}
	dir := m.createDirLocked(tp) // the preferred dir of a log-dir move, else nextLogDirs
	m.mu.Unlock()
	if dir == "" {
		return nil, fmt.Errorf("create log %s: no log dir is online: %w", tp, ErrKafkaStorage)
	}
	path := filepath.Join(dir, tp.String())
	if err := m.fs.MkdirAll(path, 0o755); err != nil {
		m.markDirOffline(dir, fmt.Errorf("create %s: %w", path, err))
		return nil, fmt.Errorf("create log %s in %s: %w", tp, dir, ErrKafkaStorage)
	}
	opts := m.openOptions(dir, tp, cfg)
	opts.TopicID = topicID
	opts.CleanShutdown = true // a new, empty dir: nothing to recover
	opts.LogStartOffset = -1
	l, err := OpenLog(path, opts)
	if err != nil {
		if errors.Is(err, ErrKafkaStorage) || isIOError(err) {
			m.markDirOffline(dir, fmt.Errorf("create log %s: %w", path, err))
			return nil, fmt.Errorf("create log %s in %s: %w", tp, dir, ErrKafkaStorage)
		}
		return nil, fmt.Errorf("create log %s in %s: %w", tp, dir, err)
	}
	m.mu.Lock()
	m.mu.logs[tp] = l
	m.mu.logDir[tp] = dir
	m.mu.Unlock()
	m.clearPreferredLogDir(tp)
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "dir": dir}).Info("created log")
	return l, nil
}

func (m *Manager) checkExisting(l *Log, dir string, tp TopicPartition, topicID [16]byte) (*Log, error) {
	if m.isOffline(dir) {
		return nil, fmt.Errorf("log %s is in offline dir %s: %w", tp, dir, ErrKafkaStorage)
	}
	if have := l.TopicID(); topicID != ([16]byte{}) && have != ([16]byte{}) && have != topicID {
		return nil, fmt.Errorf("log %s: topic id %s does not match the stored topic id %s: %w",
			tp, TopicIDString(topicID), TopicIDString(have), ErrInvalidConfig)
	}
	return l, nil
}

func (m *Manager) lookup(tp TopicPartition) (*Log, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.mu.logs[tp]
	return l, m.mu.logDir[tp], ok
}

// nextLogDirLocked picks the online dir with the fewest partitions, ties in config order.
func (m *Manager) nextLogDirLocked() string {
	counts := make(map[string]int)
	for _, d := range m.mu.logDir {
		counts[d]++
	}
	best, bestN := "", -1
	for _, d := range m.dirs {
		if _, off := m.mu.offline[d]; off {
			continue
		}
		if bestN < 0 || counts[d] < bestN {
			best, bestN = d, counts[d]
		}
	}
	return best
}

// LogInit is one log creation in progress, between InitializingLog and the
// FinishedInitializingLog that ends it.
type LogInit struct {
	tp    TopicPartition
	dirty bool // guarded by Manager.mu: the topic's config changed since the last check
}

// TopicPartition returns the partition whose log is being created.
func (li *LogInit) TopicPartition() TopicPartition { return li.tp }

// InitializingLog (LogManager.initializingLog) records that tp's log is about to be created
// with a topic config the caller reads after this call. A topic config change applied to the
// existing logs meanwhile (TopicConfigUpdated) would miss the new log; FinishedInitializingLog
// reports it so the caller applies the config again. Each call has its own LogInit, so
// overlapping creations of one partition do not consume each other's notice.
func (m *Manager) InitializingLog(tp TopicPartition) *LogInit {
	li := &LogInit{tp: tp}
	m.mu.Lock()
	m.mu.initializing[li] = struct{}{}
	m.mu.Unlock()
	return li
}

// TopicConfigUpdated (LogManager.topicConfigUpdated) marks the log creations in progress
// for topic as having a stale config. Call it after the new config is stored and before
// applying it to the topic's existing logs.
func (m *Manager) TopicConfigUpdated(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for li := range m.mu.initializing {
		if li.tp.Topic == topic {
			li.dirty = true
		}
	}
}

// FinishedInitializingLog (LogManager.finishedInitializingLog) ends li, unless the topic's
// config changed since InitializingLog or the previous call: then it returns true, and the
// caller re-reads the config, applies it to the log and calls again. Kafka re-reads once;
// calling again also catches a change that lands during the re-read.
func (m *Manager) FinishedInitializingLog(li *LogInit) (reload bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if li.dirty {
		li.dirty = false
		return true
	}
	delete(m.mu.initializing, li)
	return false
}

// GetLog returns tp's log. A log in an offline dir is still returned; its operations
// fail with ErrKafkaStorage (use LogDirOffline to ask first).
func (m *Manager) GetLog(tp TopicPartition) (*Log, bool) {
	l, _, ok := m.lookup(tp)
	return l, ok
}

// LogDirOffline reports whether tp's log lives in an offline dir (KAFKA_STORAGE_ERROR).
func (m *Manager) LogDirOffline(tp TopicPartition) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.mu.logDir[tp]
	if !ok {
		return false
	}
	_, off := m.mu.offline[d]
	return off
}

// AllLogs returns every log, sorted by topic and partition.
func (m *Manager) AllLogs() []*Log {
	m.mu.Lock()
	out := make([]*Log, 0, len(m.mu.logs))
	for _, l := range m.mu.logs {
		out = append(out, l)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].TopicPartition(), out[j].TopicPartition()
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}

// onlineLogsByDir groups the logs of online dirs by dir.
func (m *Manager) onlineLogsByDir() map[string][]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]*Log)
	for _, d := range m.dirs {
		if _, off := m.mu.offline[d]; !off {
			out[d] = nil
		}
	}
	for tp, l := range m.mu.logs {
		d := m.mu.logDir[tp]
		if _, ok := out[d]; ok {
			out[d] = append(out[d], l)
		}
	}
	m.futureLogsByDirLocked(out) // flushed, checkpointed and closed with their dir
	return out
}

// TruncateTo is LogManager.truncateTo for follower truncation: cleaning of the log is
// paused meanwhile, the cleaner checkpoint is pulled back to the active segment's base if
// it was beyond it (so re-appended offsets are cleaned again), and the dir's recovery
// points are checkpointed.
func (m *Manager) TruncateTo(tp TopicPartition, offset int64) error {
	return m.truncate(tp, offset, func(l *Log) error { return l.TruncateTo(offset) })
}

// TruncateFullyAndStartAt is LogManager.truncateFullyAndStartAt: every segment goes and the
// log restarts empty at offset.
func (m *Manager) TruncateFullyAndStartAt(tp TopicPartition, offset int64) error {
	return m.truncate(tp, offset, func(l *Log) error { return l.TruncateFullyAndStartAt(offset) })
}

func (m *Manager) truncate(tp TopicPartition, offset int64, fn func(*Log) error) error {
	m.fut.swapMu.RLock() // not while the log is replaced by its future log (future.go)
	defer m.fut.swapMu.RUnlock()
	l, dir, ok := m.lookup(tp)
	if !ok {
		return fmt.Errorf("logstore: truncate %s to %d: no such log", tp, offset)
	}
	if m.cleaner != nil {
		m.cleaner.pause(tp)
		defer m.cleaner.resume(tp)
	}
	if err := fn(l); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", tp, offset, err)
	}
	if m.cleaner != nil {
		if segs := l.Segments(); len(segs) > 0 {
			m.cleaner.maybeTruncateCheckpoint(dir, l, segs[len(segs)-1].BaseOffset)
		}
	}
	m.writeDirCheckpoint(dir, RecoveryPointCheckpointFile, recoveryPoints(m.onlineLogsByDir()[dir]))
	return nil
}
