package broker

// http_listener.go — the broker's metrics (internal/metrics, under the names the Prometheus
// JMX exporter gives Kafka's MBeans) and the optional samsa.http.listener that serves them
// at /metrics, with net/http/pprof beside them when samsa.debug.listener is set too. Kafka
// itself exposes these through JMX; there is no HTTP listener in Kafka.

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/samsa-kafka/samsa/internal/metrics"
)

// startMetrics registers every component's metrics and starts samsa.http.listener when set.
// Called once in start, after the components exist and before the listeners serve.
func (b *Broker) startMetrics() error {
	b.metrics = metrics.NewRegistry()
	b.registerMetrics(b.metrics)
	if err := b.startStateChangeLog(); err != nil { // statechange_log.go
		return err
	}
	if b.cfg.HTTPListener == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.metrics.Gatherer(), promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, // a failing collector must not hide the rest
	}))
	b.addWebView(mux) // the internals view at / (webview.go)
	if b.cfg.DebugListener != "" {
		addPprof(mux)
	}
	s, err := startHTTPServer(b.cfg.HTTPListener, "samsa.http.listener", "http.listener", mux, b.log)
	if err != nil {
		return err
	}
	b.http = s
	return nil
}

// stopMetrics closes samsa.http.listener.
func (b *Broker) stopMetrics() {
	b.stopStateChangeLog() // statechange_log.go
	if b.http != nil {
		webRemotes.Delete(b.http.Addr()) // its gather cache (webview_remote.go)
		b.http.Close()
	}
}

// HTTPAddr is the bound samsa.http.listener address, "" when it is off.
func (b *Broker) HTTPAddr() string {
	if b.http == nil {
		return ""
	}
	return b.http.Addr()
}

// Metrics is the broker's metrics registry (nil before Start).
func (b *Broker) Metrics() *metrics.Registry { return b.metrics }

// registerMetrics hands the registry to each component, which registers its metrics
// (metrics_*.go). Components keep their meters; gauges read their state at scrape time.
func (b *Broker) registerMetrics(reg *metrics.Registry) {
	b.apis.Metrics = newAPIMetrics(reg, b.apis) // metrics_api.go, metrics_request.go
	b.registerReplicaMetrics(reg)               // metrics_replica.go
	b.registerControlMetrics(reg)               // metrics_coordinators.go
}
