package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The exporter's names: meters as _total counters, gauges by name, histograms as quantile
// gauges ("0.50"..."0.999") plus _count, all lower-cased, labels as the MBean keys.
func TestExporterNames(t *testing.T) {
	r := NewRegistry()
	r.TopicMeter("server", "BrokerTopicMetrics", "MessagesInPerSec", "messages in").Add("t", 3)
	r.TopicMeter("server", "BrokerTopicMetrics", "BytesInPerSec", "bytes in").AddAll(5)
	r.Meter("server", "ReplicaManager", "IsrShrinksPerSec", "shrinks").WithLabelValues().Inc()
	r.GaugeFunc("controller", "KafkaController", "ActiveControllerCount", "active", func() float64 { return 1 })
	r.GaugeSet("log", "Log", "Size", "size", []string{"topic", "partition"}, func(emit func(Sample)) {
		emit(Sample{[]string{"t", "0"}, 42})
	})
	h := r.Histogram("network", "RequestMetrics", "TotalTimeMs", "total time", "request")
	for i := 1; i <= 100; i++ {
		h.Observe(float64(i), "Produce")
	}
	srv := httptest.NewServer(promhttp.HandlerFor(r.Gatherer(), promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	out := b.String()
	for _, want := range []string{
		`kafka_server_brokertopicmetrics_messagesin_total 3`,
		`kafka_server_brokertopicmetrics_messagesin_total{topic="t"} 3`,
		`kafka_server_brokertopicmetrics_bytesin_total 5`,
		`kafka_server_replicamanager_isrshrinks_total 1`,
		`kafka_controller_kafkacontroller_activecontrollercount 1`,
		`kafka_log_log_size{partition="0",topic="t"} 42`,
		`kafka_network_requestmetrics_totaltimems_count{request="Produce"} 100`,
		`kafka_network_requestmetrics_totaltimems{quantile="0.50",request="Produce"} 50`,
		`kafka_network_requestmetrics_totaltimems{quantile="0.999",request="Produce"} 100`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
