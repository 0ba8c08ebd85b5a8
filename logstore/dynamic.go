package logstore

// dynamic.go is the log side of dynamic broker configs: new broker defaults for the topic
// keys reach every live log (Kafka's DynamicLogConfig with
// LogManager.reconfigureDefaultLogConfig), the log cleaner restarts its threads with new
// settings (LogCleaner.reconfigure, with the shared cleaner-io Throttler), and
// num.recovery.threads.per.data.dir changes the pool used at shut-down and later loads
// (LogManager.resizeRecoveryThreadPool).

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// managerDynamic is the Manager's state that dynamic configs change.
type managerDynamic struct {
	// props are the broker props now in force; nil means ManagerConfig.BrokerProps.
	props atomic.Pointer[map[string]string]
	// recoveryThreads is num.recovery.threads.per.data.dir now; 0 means the configured one.
	recoveryThreads atomic.Int32
	// producerIDExpirationMs is producer.id.expiration.ms now; 0 means the configured one.
	// Every log's producer state reads it at each expiry check.
	producerIDExpirationMs atomic.Int64

	cleanerMu sync.Mutex // serializes cleaner restarts; guards the fields below
	cleanerSt *CleanerSettings
	ctx       context.Context // the background tasks' context once Start ran
	pool      *cleanerPool
}

// cleanerPool is one generation of cleaner goroutines (Kafka's CleanerThreads).
type cleanerPool struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// BrokerProps are the broker props the Manager resolves topic defaults from now.
func (m *Manager) BrokerProps() map[string]string {
	if p := m.dyn.props.Load(); p != nil {
		return *p
	}
	return m.cfg.BrokerProps
}

// TopicLogConfig builds a topic's LogConfig from its overrides over the current broker
// props, as the topic config handler and log creation must once defaults can change.
func (m *Manager) TopicLogConfig(overrides map[string]string) (LogConfig, error) {
	return NewLogConfig(m.BrokerProps(), overrides)
}

// Overrides returns the topic-level keys this config took from the topic's own overrides
// (LogConfig.overriddenConfigs), normalized.
func (c LogConfig) Overrides() map[string]string {
	out := make(map[string]string)
	for k, s := range c.sources {
		if s == SourceTopic {
			out[k] = c.values[k]
		}
	}
	return out
}

// SetBrokerProps is DynamicLogConfig.reconfigure: the broker defaults of the topic keys
// become props; every live log gets its config rebuilt from props and its own topic
// overrides (which still win), and logs created later resolve against props. Log
// creations in progress are flagged (LogManager.brokerConfigUpdated) so their creator
// re-reads the config. An override that no longer resolves keeps the log's config as it
// was (logged).
func (m *Manager) SetBrokerProps(props map[string]string) {
	cp := make(map[string]string, len(props))
	for k, v := range props {
		cp[k] = v
	}
	m.dyn.props.Store(&cp)
	m.mu.Lock()
	m.mu.cfgCache = make(map[string]LogConfig)
	for li := range m.mu.initializing {
		li.dirty = true
	}
	m.mu.Unlock()
	updated := 0
	for _, l := range m.AllLogs() {
		old := l.Config()
		c, err := NewLogConfig(cp, old.Overrides())
		if err != nil {
			tp := l.TopicPartition()
			m.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).
				Warn("new broker log defaults do not resolve with the topic's overrides; the log keeps its config")
			continue
		}
		l.SetConfig(c)
		updated++
	}
	m.log.WithField("logs", updated).Info("applied new broker log defaults")
}

// recoveryThreadsPerDir is num.recovery.threads.per.data.dir as it is now.
func (m *Manager) recoveryThreadsPerDir() int {
	if n := m.dyn.recoveryThreads.Load(); n > 0 {
		return int(n)
	}
	return m.cfg.RecoveryThreadsPerDir
}

// SetRecoveryThreadsPerDir is LogManager.resizeRecoveryThreadPool: the closers at
// shut-down use n threads per dir.
func (m *Manager) SetRecoveryThreadsPerDir(n int) {
	if n < 1 {
		n = 1
	}
	m.dyn.recoveryThreads.Store(int32(n))
	m.log.WithField("threads", n).Info("resized recovery thread pool")
}

// SetProducerIDExpiration is ProducerStateManagerConfig.setProducerIdExpirationMs: every
// live log's producer state, and those of logs created later, expire idle producers after
// d from their next expiry check on.
func (m *Manager) SetProducerIDExpiration(d time.Duration) {
	ms := d.Milliseconds()
	if ms <= 0 {
		return
	}
	m.dyn.producerIDExpirationMs.Store(ms)
	m.log.WithField("producer_id_expiration_ms", ms).Info("updated producer id expiration")
}

// ProducerIDExpiration is producer.id.expiration.ms as it is now.
func (m *Manager) ProducerIDExpiration() time.Duration {
	if ms := m.dyn.producerIDExpirationMs.Load(); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return m.cfg.ProducerIDExpiration
}

// CleanerSettings are LogCleaner's dynamic settings (Kafka's CleanerConfig).
type CleanerSettings struct {
	Threads             int           // log.cleaner.threads (1)
	DedupeBufferSize    int64         // log.cleaner.dedupe.buffer.size (128 MiB), split among threads
	DedupeLoadFactor    float64       // log.cleaner.io.buffer.load.factor (0.9)
	IOBufferSize        int           // log.cleaner.io.buffer.size (512 KiB); samsa reads whole batches, so unused
	MaxIOBytesPerSecond float64       // log.cleaner.io.max.bytes.per.second (unbounded)
	Backoff             time.Duration // log.cleaner.backoff.ms (15 s)
}

// CleanerSettingsFromProps reads the log.cleaner.* broker keys (Kafka's defaults when unset).
func CleanerSettingsFromProps(props map[string]string) CleanerSettings {
	s := CleanerSettings{Threads: 1, DedupeBufferSize: 128 << 20, DedupeLoadFactor: defaultDedupeLoadFactor,
		IOBufferSize: 512 << 10, MaxIOBytesPerSecond: math.MaxFloat64, Backoff: 15 * time.Second}
	if n, err := strconv.ParseInt(strings.TrimSpace(props["log.cleaner.threads"]), 10, 32); err == nil {
		s.Threads = int(n)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(props["log.cleaner.dedupe.buffer.size"]), 10, 64); err == nil {
		s.DedupeBufferSize = n
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(props["log.cleaner.io.buffer.load.factor"]), 64); err == nil {
		s.DedupeLoadFactor = f
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(props["log.cleaner.io.buffer.size"]), 10, 32); err == nil {
		s.IOBufferSize = int(n)
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(props["log.cleaner.io.max.bytes.per.second"]), 64); err == nil {
		s.MaxIOBytesPerSecond = f
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(props["log.cleaner.backoff.ms"]), 10, 64); err == nil {
		s.Backoff = time.Duration(n) * time.Millisecond
	}
	return s
}

// defaultDedupeLoadFactor is log.cleaner.io.buffer.load.factor's default.
const defaultDedupeLoadFactor = 0.9

// CleanerSettings are the cleaner's settings in force.
func (m *Manager) CleanerSettings() CleanerSettings {
	m.dyn.cleanerMu.Lock()
	defer m.dyn.cleanerMu.Unlock()
	return m.cleanerSettingsLocked()
}

func (m *Manager) cleanerSettingsLocked() CleanerSettings {
	if m.dyn.cleanerSt != nil {
		return *m.dyn.cleanerSt
	}
	// Start-up: the explicit ManagerConfig fields win, the rest comes from the props.
	s := CleanerSettingsFromProps(m.cfg.BrokerProps)
	s.Backoff = m.cfg.CleanerBackoff
	s.DedupeBufferSize = m.cfg.CleanerDedupeBufferSize
	return s
}

// ValidateCleanerSettings is LogCleaner.validateReconfiguration: the thread count must be
// at least 1 and within half and double of the current one.
func (m *Manager) ValidateCleanerSettings(s CleanerSettings) error {
	cur := m.CleanerSettings().Threads
	switch {
	case s.Threads < 1:
		return fmt.Errorf("%w: Log cleaner threads should be at least 1", ErrInvalidConfig)
	case s.Threads < cur/2:
		return fmt.Errorf("%w: Log cleaner threads cannot be reduced to less than half the current value %d", ErrInvalidConfig, cur)
	case s.Threads > cur*2:
		return fmt.Errorf("%w: Log cleaner threads cannot be increased to more than double the current value %d", ErrInvalidConfig, cur)
	}
	return nil
}

// ReconfigureCleaner is LogCleaner.reconfigure: the shared I/O throttle takes the new rate,
// then the cleaner goroutines are stopped (a pass in progress is aborted; it starts over
// later) and started again with the new settings. With log.cleaner.enable=false nothing
// runs, as in Kafka, but the settings are kept.
func (m *Manager) ReconfigureCleaner(s CleanerSettings) {
	m.dyn.cleanerMu.Lock()
	defer m.dyn.cleanerMu.Unlock()
	st := s
	m.dyn.cleanerSt = &st
	if m.cleaner == nil {
		return
	}
	m.cleaner.throttler.setRate(s.MaxIOBytesPerSecond)
	m.stopCleanersLocked()
	if m.dyn.ctx != nil {
		m.startCleanersLocked(m.dyn.ctx)
	}
	m.log.WithFields(logrus.Fields{"threads": s.Threads, "dedupe_buffer_size": s.DedupeBufferSize,
		"load_factor": s.DedupeLoadFactor, "io_max_bytes_per_second": s.MaxIOBytesPerSecond,
		"backoff_ms": s.Backoff.Milliseconds()}).Info("reconfigured log cleaner")
}

// startCleaners starts the cleaner goroutines under ctx (from Start).
func (m *Manager) startCleaners(ctx context.Context) {
	m.dyn.cleanerMu.Lock()
	defer m.dyn.cleanerMu.Unlock()
	m.dyn.ctx = ctx
	if m.cleaner == nil {
		return
	}
	m.cleaner.throttler.setRate(m.cleanerSettingsLocked().MaxIOBytesPerSecond)
	m.startCleanersLocked(ctx)
}

func (m *Manager) startCleanersLocked(ctx context.Context) {
	if !m.cfg.CleanerEnable || ctx.Err() != nil {
		return
	}
	s := m.cleanerSettingsLocked()
	backoff := s.Backoff
	if backoff <= 0 {
		backoff = time.Millisecond
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &cleanerPool{cancel: cancel}
	m.mu.Lock()
	if m.mu.shutdown {
		m.mu.Unlock()
		cancel()
		return
	}
	// Added under mu so Shutdown's Wait cannot miss them.
	m.wg.Add(s.Threads)
	m.mu.Unlock()
	p.wg.Add(s.Threads)
	m.cleaner.halt.Store(false)
	m.cleaner.setBuffer(s)
	for i := 0; i < s.Threads; i++ {
		go func() {
			defer m.wg.Done()
			defer p.wg.Done()
			t := time.NewTicker(backoff)
			defer t.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-t.C:
					m.cleaner.cleanOnce()
				}
			}
		}()
	}
	m.dyn.pool = p
}

// stopCleanersLocked stops the running cleaner goroutines and waits for them; a pass in
// progress sees halt and aborts (Kafka's ShutdownableThread interrupts it the same way).
func (m *Manager) stopCleanersLocked() {
	p := m.dyn.pool
	if p == nil {
		return
	}
	m.cleaner.halt.Store(true)
	p.cancel()
	p.wg.Wait()
	m.dyn.pool = nil
}

// cleanerDynamic is the Cleaner's state that dynamic configs change.
type cleanerDynamic struct {
	// halt aborts passes in progress while the cleaner threads restart.
	halt atomic.Bool
	// mapBytes is the offset map size each pass uses: the dedupe buffer per thread, scaled
	// by the load factor (SkimpyOffsetMap's capacity); 0 means ManagerConfig's.
	mapBytes  atomic.Int64
	throttler ioThrottler
}

// setBuffer sets the offset map size for the given settings: the dedupe buffer is split
// among the threads (at most 2 GiB each, as Kafka caps it) and the slots filled up to the
// load factor.
func (c *Cleaner) setBuffer(s CleanerSettings) {
	threads := int64(s.Threads)
	if threads < 1 {
		threads = 1
	}
	per := s.DedupeBufferSize / threads
	if per > math.MaxInt32 {
		per = math.MaxInt32
	}
	lf := s.DedupeLoadFactor
	if lf <= 0 || lf > 1 {
		lf = defaultDedupeLoadFactor
	}
	// newOffsetMap fills to defaultDedupeLoadFactor; scale so the slot count follows lf.
	c.mapBytes.Store(int64(float64(per) * lf / defaultDedupeLoadFactor))
}

// offsetMapBytes is the dedupe buffer a pass uses now.
func (c *Cleaner) offsetMapBytes() int64 {
	if n := c.mapBytes.Load(); n > 0 {
		return n
	}
	return c.m.cfg.CleanerDedupeBufferSize
}

// ioThrottler is Kafka's Throttler (kafka.utils.Throttler) for the cleaner's I/O, shared by
// all cleaner threads: every checkInterval it compares the bytes observed with the desired
// rate and sleeps long enough to bring the rate down to it.
type ioThrottler struct {
	rate atomic.Uint64 // math.Float64bits of bytes/s; 0 = not set (unbounded)

	mu          sync.Mutex
	periodStart time.Time
	observed    float64
	sleep       func(time.Duration) // time.Sleep; a seam for tests
	now         func() time.Time
}

// cleanerThrottleCheckInterval is the LogCleaner throttler's checkIntervalMs (300).
const cleanerThrottleCheckInterval = 300 * time.Millisecond

func (t *ioThrottler) setRate(r float64) { t.rate.Store(math.Float64bits(r)) }

// maybeThrottle is Throttler.maybeThrottle.
func (t *ioThrottler) maybeThrottle(n int64) {
	bits := t.rate.Load()
	rate := math.Float64frombits(bits)
	if bits == 0 || rate <= 0 || rate >= math.MaxFloat64 || n <= 0 {
		return
	}
	now, sleep := time.Now, time.Sleep
	if t.now != nil {
		now = t.now
	}
	if t.sleep != nil {
		sleep = t.sleep
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.periodStart.IsZero() {
		t.periodStart = now()
	}
	t.observed += float64(n)
	elapsed := now().Sub(t.periodStart)
	if elapsed > cleanerThrottleCheckInterval && t.observed > 0 {
		if t.observed/elapsed.Seconds() > rate {
			want := time.Duration(t.observed / rate * float64(time.Second))
			if d := want - elapsed; d > 0 {
				sleep(d)
			}
		}
		t.periodStart = now()
		t.observed = 0
	}
}

// throttledLog charges the cleaner's reads and writes of one pass to the throttler, where
// Kafka's Cleaner calls throttler.maybeThrottle after each read and write buffer.
type throttledLog struct {
	compactLog
	t *ioThrottler
}

func (l throttledLog) forEachBatch(segBase int64, fn func(b recordbatch.Batch) error) error {
	return l.compactLog.forEachBatch(segBase, func(b recordbatch.Batch) error {
		l.t.maybeThrottle(int64(len(b)))
		return fn(b)
	})
}

func (l throttledLog) replaceWithCleaned(base int64, oldBases []int64, emit func(write func(batch []byte) error, index func(AbortedTxn) error) error) error {
	return l.compactLog.replaceWithCleaned(base, oldBases, func(write func([]byte) error, index func(AbortedTxn) error) error {
		return emit(func(b []byte) error {
			l.t.maybeThrottle(int64(len(b)))
			return write(b)
		}, index)
	})
}
