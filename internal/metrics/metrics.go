// Package metrics exports samsa's metrics in the Prometheus text format under the names that
// the Prometheus JMX exporter's example Kafka configuration (kafka-2_0_0.yml, with
// lowercaseOutputName) gives Kafka's MBeans, so dashboards and alert rules written for Kafka
// read samsa unchanged. An MBean kafka.<domain>:type=<Type>,name=<Name>[,k=v...] becomes:
//
//   - a Yammer Meter (name ending in PerSec): its Count as the counter
//     kafka_<domain>_<type>_<name without PerSec>_total{k="v"...};
//   - a Gauge: its Value as kafka_<domain>_<type>_<name>{k="v"...};
//   - a Histogram or Timer: its Count as kafka_<domain>_<type>_<name>_count and its
//     percentiles as kafka_<domain>_<type>_<name>{quantile="0.50"|"0.75"|"0.95"|"0.98"|
//     "0.99"|"0.999"}, the exporter's emulation of a summary (no _sum).
//
// Only the metric name is lower-cased; label names keep the MBean's key (topic, partition,
// request, version...).
package metrics

import (
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Registry holds one broker's metrics. Each broker (several may run in one process, as in
// tests) has its own.
type Registry struct {
	reg *prometheus.Registry
	// agg holds the unlabelled (broker-wide) series of families that also have labelled
	// ones, such as MessagesInPerSec with and without topic: the Prometheus client refuses
	// two label sets in one registry's family, the JMX exporter has both.
	agg *prometheus.Registry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{reg: prometheus.NewRegistry(), agg: prometheus.NewRegistry()}
}

// Gatherer is what an HTTP handler (promhttp.HandlerFor) serves: both registries, families
// of the same name merged.
func (r *Registry) Gatherer() prometheus.Gatherer { return mergedGatherer{r.reg, r.agg} }

type mergedGatherer struct{ a, b prometheus.Gatherer }

func (g mergedGatherer) Gather() ([]*dto.MetricFamily, error) {
	fa, err := g.a.Gather()
	if err != nil {
		return fa, err
	}
	fb, err := g.b.Gather()
	if err != nil {
		return fa, err
	}
	byName := make(map[string]*dto.MetricFamily, len(fa))
	for _, f := range fa {
		byName[f.GetName()] = f
	}
	for _, f := range fb {
		if have, ok := byName[f.GetName()]; ok && have.GetType() == f.GetType() {
			have.Metric = append(f.Metric, have.Metric...) // the unlabelled series first
			continue
		}
		fa = append(fa, f)
	}
	sort.Slice(fa, func(i, j int) bool { return fa[i].GetName() < fa[j].GetName() })
	return fa, nil
}

// TopicMeter is a BrokerTopicMetrics-style meter kept broker-wide (no label) and per topic
// (label "topic"), as Kafka's BrokerTopicStats keeps allTopicsStats beside each topic's.
type TopicMeter struct {
	all   prometheus.Counter
	topic *prometheus.CounterVec
}

// TopicMeter registers a meter with a broker-wide and a per-topic series.
func (r *Registry) TopicMeter(domain, typ, name, help string) *TopicMeter {
	base := strings.TrimSuffix(name, "PerSec")
	opts := prometheus.CounterOpts{
		Name: Name(domain, typ, base) + "_total",
		Help: help + " (" + mbean(domain, typ, name) + "[,topic=<topic>] Count)",
	}
	m := &TopicMeter{all: prometheus.NewCounter(opts), topic: prometheus.NewCounterVec(opts, []string{"topic"})}
	r.agg.MustRegister(m.all)
	r.reg.MustRegister(m.topic)
	return m
}

// Add marks n events for topic and for the broker.
func (m *TopicMeter) Add(topic string, n float64) {
	m.all.Add(n)
	m.topic.WithLabelValues(topic).Add(n)
}

// AddAll marks n events for the broker only (Kafka marks some meters, e.g. for a request
// that failed before its topic was known, on allTopicsStats alone).
func (m *TopicMeter) AddAll(n float64) { m.all.Add(n) }

// RemoveTopic drops a deleted topic's series (BrokerTopicStats.removeMetrics).
func (m *TopicMeter) RemoveTopic(topic string) { m.topic.DeleteLabelValues(topic) }

// Name is the exporter's metric name for an MBean's domain (without "kafka."), type and
// name, e.g. Name("server", "ReplicaManager", "UnderReplicatedPartitions") =
// "kafka_server_replicamanager_underreplicatedpartitions".
func Name(domain, typ, name string) string {
	return strings.ToLower("kafka_" + domain + "_" + typ + "_" + name)
}

// Meter registers a Yammer Meter: name must end in "PerSec" (as Kafka's meters do); the
// counter is kafka_<domain>_<type>_<name minus PerSec>_total with the given label names.
// Mark it with Add / Inc through WithLabelValues.
func (r *Registry) Meter(domain, typ, name, help string, labelNames ...string) *prometheus.CounterVec {
	base := strings.TrimSuffix(name, "PerSec")
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: Name(domain, typ, base) + "_total",
		Help: help + " (" + mbean(domain, typ, name) + " Count)",
	}, labelNames)
	r.reg.MustRegister(c)
	return c
}

// Gauge registers a settable gauge kafka_<domain>_<type>_<name>.
func (r *Registry) Gauge(domain, typ, name, help string, labelNames ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: Name(domain, typ, name),
		Help: help + " (" + mbean(domain, typ, name) + " Value)",
	}, labelNames)
	r.reg.MustRegister(g)
	return g
}

// GaugeFunc registers a gauge without labels whose value fn computes at each scrape (as
// Kafka's Gauge[T] { def value }). fn must be cheap and safe to call from any goroutine.
func (r *Registry) GaugeFunc(domain, typ, name, help string, fn func() float64) {
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: Name(domain, typ, name),
		Help: help + " (" + mbean(domain, typ, name) + " Value)",
	}, fn))
}

// Sample is one labelled value of a GaugeSet.
type Sample struct {
	LabelValues []string
	Value       float64
}

// GaugeSet registers a gauge family whose labelled values are produced at scrape time by
// fn, for sets that change with the cluster (per partition log sizes, per-topic state):
// nothing is kept between scrapes, so a removed partition disappears with no clean-up.
func (r *Registry) GaugeSet(domain, typ, name, help string, labelNames []string, fn func(emit func(Sample))) {
	r.reg.MustRegister(&gaugeSet{
		desc: prometheus.NewDesc(Name(domain, typ, name), help+" ("+mbean(domain, typ, name)+" Value)", labelNames, nil),
		fn:   fn,
		kind: prometheus.GaugeValue,
	})
}

// HistogramCountSet registers the count of a histogram whose values fn produces at scrape
// time, as the counter kafka_<domain>_<type>_<name>_count (for histograms kept outside
// Histogram, e.g. a cheaper recorder on a hot path; their percentiles go through GaugeSet).
func (r *Registry) HistogramCountSet(domain, typ, name, help string, labelNames []string, fn func(emit func(Sample))) {
	r.reg.MustRegister(&gaugeSet{
		desc: prometheus.NewDesc(Name(domain, typ, name)+"_count", help+" ("+mbean(domain, typ, name)+" Count)", labelNames, nil),
		fn:   fn,
		kind: prometheus.CounterValue,
	})
}

type gaugeSet struct {
	desc *prometheus.Desc
	fn   func(emit func(Sample))
	kind prometheus.ValueType
}

func (g *gaugeSet) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *gaugeSet) Collect(ch chan<- prometheus.Metric) {
	g.fn(func(s Sample) {
		if m, err := prometheus.NewConstMetric(g.desc, g.kind, s.Value, s.LabelValues...); err == nil {
			ch <- m
		}
	})
}

// mbean is the MBean name a metric stands for, for its help text.
func mbean(domain, typ, name string) string {
	return "kafka." + domain + ":type=" + typ + ",name=" + name
}

// quantiles are the percentiles Yammer's histograms expose, with the label value the
// exporter derives from their attribute names (50thPercentile → "0.50", 999th → "0.999").
var quantiles = []struct {
	q     float64
	label string
}{{0.50, "0.50"}, {0.75, "0.75"}, {0.95, "0.95"}, {0.98, "0.98"}, {0.99, "0.99"}, {0.999, "0.999"}}

// Histogram registers a Yammer Histogram or Timer (Kafka's ...Ms and RateAndTimeMs metrics):
// Observe(v, labelValues...) records one value; a scrape exports the count as
// kafka_<domain>_<type>_<name>_count and the percentiles of the recent values as the
// quantile gauges. The percentiles cover a sliding window of about a minute (Yammer's
// exponentially decaying reservoir favours the last five minutes).
func (r *Registry) Histogram(domain, typ, name, help string, labelNames ...string) *Histogram {
	objectives := make(map[float64]float64, len(quantiles))
	for _, q := range quantiles {
		objectives[q.q] = 0.0005
	}
	h := &Histogram{
		summary: prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Name: "unused", Objectives: objectives, MaxAge: 60e9, AgeBuckets: 3,
		}, labelNames),
		quantileDesc: prometheus.NewDesc(Name(domain, typ, name), help+" ("+mbean(domain, typ, name)+" percentiles)",
			append(append([]string{}, labelNames...), "quantile"), nil),
		countDesc: prometheus.NewDesc(Name(domain, typ, name)+"_count", help+" ("+mbean(domain, typ, name)+" Count)",
			labelNames, nil),
		labels: map[string][]string{},
	}
	r.reg.MustRegister(h)
	return h
}

// Histogram is a Yammer-style histogram exported the JMX exporter's way.
type Histogram struct {
	summary      *prometheus.SummaryVec
	quantileDesc *prometheus.Desc
	countDesc    *prometheus.Desc

	mu     sync.Mutex
	labels map[string][]string // label values seen, by their joined key
}

// Observe records v for the given label values.
func (h *Histogram) Observe(v float64, labelValues ...string) {
	key := strings.Join(labelValues, "\x00")
	h.mu.Lock()
	if _, ok := h.labels[key]; !ok {
		h.labels[key] = append([]string(nil), labelValues...)
	}
	h.mu.Unlock()
	h.summary.WithLabelValues(labelValues...).Observe(v)
}

// Declare exports the series for labelValues (count 0, quantiles 0) before any Observe, as
// Yammer metrics exist from their registration: a dashboard sees 0, not a missing series.
func (h *Histogram) Declare(labelValues ...string) {
	key := strings.Join(labelValues, "\x00")
	h.mu.Lock()
	if _, ok := h.labels[key]; !ok {
		h.labels[key] = append([]string(nil), labelValues...)
	}
	h.mu.Unlock()
	h.summary.WithLabelValues(labelValues...)
}

func (h *Histogram) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.quantileDesc
	ch <- h.countDesc
}

func (h *Histogram) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	sets := make([][]string, 0, len(h.labels))
	for _, lv := range h.labels {
		sets = append(sets, lv)
	}
	h.mu.Unlock()
	for _, lv := range sets {
		m, err := h.summary.GetMetricWithLabelValues(lv...)
		if err != nil {
			continue
		}
		s := summaryOf(m)
		if s == nil {
			continue
		}
		if c, err := prometheus.NewConstMetric(h.countDesc, prometheus.CounterValue, float64(s.GetSampleCount()), lv...); err == nil {
			ch <- c
		}
		for _, q := range s.GetQuantile() {
			label := quantileLabel(q.GetQuantile())
			if label == "" {
				continue
			}
			v := q.GetValue()
			if v != v { // NaN: no value in the window; Yammer reports 0
				v = 0
			}
			if g, err := prometheus.NewConstMetric(h.quantileDesc, prometheus.GaugeValue, v, append(append([]string{}, lv...), label)...); err == nil {
				ch <- g
			}
		}
	}
}

func quantileLabel(q float64) string {
	for _, x := range quantiles {
		if x.q == q {
			return x.label
		}
	}
	return ""
}

// summaryOf reads a summary's current state (count and quantiles).
func summaryOf(o prometheus.Observer) *dto.Summary {
	m, ok := o.(prometheus.Metric)
	if !ok {
		return nil
	}
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		return nil
	}
	return out.GetSummary()
}
