package broker

// quota_rate.go mirrors the pieces of Kafka's metrics library that quotas rest on: Rate over
// a WindowedSum (SampledStat) with quota.window.num samples of quota.window.size.seconds each,
// the quota check of Sensor.checkQuotas and QuotaUtils.throttleTime. The arithmetic is
// Kafka's so that a client sees the same throttle times against samsa as against Kafka:
// the rate is the sum of the retained samples divided by the elapsed window, where the
// window counts at least samples-1 whole windows (a fresh sensor does not report a huge
// rate from its first bytes), and the throttle time is how long the window must stretch
// for the observed rate to fall back to the quota: (O - T) / T * W.

import (
	"math"
	"time"
)

// rateConfig is the part of Kafka's MetricConfig a quota Rate uses.
type rateConfig struct {
	samples  int   // quota.window.num
	windowMs int64 // quota.window.size.seconds in ms
}

func newRateConfig(samples int, window time.Duration) rateConfig {
	if samples < 1 {
		samples = 1
	}
	ms := window.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return rateConfig{samples: samples, windowMs: ms}
}

type rateSample struct {
	value        float64
	lastWindowMs int64
}

// windowedRate is Rate(WindowedSum): samples rotate round-robin, each covering one window.
// Not safe for concurrent use; the sensor owning it locks.
type windowedRate struct {
	samples []rateSample
	current int
}

func (r *windowedRate) currentSample(nowMs int64) *rateSample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{lastWindowMs: nowMs})
	}
	return &r.samples[r.current]
}

// record is SampledStat.record: a complete current sample (older than one window) moves the
// cursor to the next one, reusing the oldest slot once all are allocated.
func (r *windowedRate) record(cfg rateConfig, value float64, nowMs int64) {
	s := r.currentSample(nowMs)
	if nowMs-s.lastWindowMs >= cfg.windowMs {
		r.current = (r.current + 1) % cfg.samples
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, rateSample{lastWindowMs: nowMs})
		} else {
			r.samples[r.current] = rateSample{lastWindowMs: nowMs}
		}
		s = &r.samples[r.current]
	}
	s.value += value
}

// purge is SampledStat.purgeObsoleteSamples: samples older than the whole retained span
// restart empty at now.
func (r *windowedRate) purge(cfg rateConfig, nowMs int64) {
	expire := int64(cfg.samples) * cfg.windowMs
	for i := range r.samples {
		if nowMs-r.samples[i].lastWindowMs >= expire {
			r.samples[i] = rateSample{lastWindowMs: nowMs}
		}
	}
}

// windowSize is Rate.windowSize in ms, never below samples-1 whole windows nor below 1ms.
func (r *windowedRate) windowSize(cfg rateConfig, nowMs int64) int64 {
	r.purge(cfg, nowMs)
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{lastWindowMs: nowMs})
	}
	oldest := r.samples[0].lastWindowMs
	for _, s := range r.samples[1:] {
		if s.lastWindowMs < oldest {
			oldest = s.lastWindowMs
		}
	}
	elapsed := nowMs - oldest
	full := elapsed / cfg.windowMs
	if minFull := int64(cfg.samples - 1); full < minFull {
		elapsed += (minFull - full) * cfg.windowMs
	}
	return max(elapsed, 1)
}

// measure is Rate.measure in units per second.
func (r *windowedRate) measure(cfg rateConfig, nowMs int64) float64 {
	r.purge(cfg, nowMs)
	sum := 0.0
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(r.windowSize(cfg, nowMs)) / 1000)
}

// throttleTimeMs is QuotaUtils.throttleTime for an observed rate above bound.
func throttleTimeMs(observed, bound float64, windowMs int64) int64 {
	return int64(math.Round((observed - bound) / bound * float64(windowMs)))
}
