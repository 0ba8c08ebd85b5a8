package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/samsa-kafka/samsa/internal/metrics"
)

// An old client (sarama speaking Kafka 0.10.0: Produce v2, Fetch v2, magic 1 message sets)
// through the socket: RequestMetrics' MessageConversionsTimeMs and TemporaryMemoryBytes are
// marked for Produce and Fetch, and exist for no other request name
// (RequestChannel.Request.updateRequestMetrics).
func TestRequestConversionHistograms(t *testing.T) {
	e := newDataEnv(t)
	reg := metrics.NewRegistry()
	e.apis.Metrics = newAPIMetrics(reg, e.apis)
	e.createTopic("old", 1)
	e.serve()

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_10_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForLocal
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	client, err := sarama.NewClient([]string{e.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	prod, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 5
	for i := 0; i < n; i++ {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "old", Value: sarama.StringEncoder(fmt.Sprint("v", i))}); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition("old", 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for i := 0; i < n; i++ {
		select {
		case <-pc.Messages():
		case err := <-pc.Errors():
			t.Fatal(err)
		case <-time.After(20 * time.Second):
			t.Fatalf("consumed %d of %d", i, n)
		}
	}
	// The fetch that carried the records is marked once its response is written, which
	// happens before the consumer sees them; a later scrape sees it.
	const rm = "kafka_network_requestmetrics_"
	var got map[string]float64
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = requestScrape(t, reg)
		if got[rm+`temporarymemorybytes{quantile="0.999",request="Fetch"}`] > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	produces := sumPrefix(got, rm+`requests_total{request="Produce",`)
	if c := got[rm+`messageconversionstimems_count{request="Produce"}`]; c != produces || c < n {
		t.Errorf("Produce MessageConversionsTimeMs count %v, want one per Produce request (%v)", c, produces)
	}
	for _, req := range []string{"Produce", "Fetch"} {
		if v := got[rm+`temporarymemorybytes{quantile="0.999",request="`+req+`"}`]; v <= 0 {
			t.Errorf("%s TemporaryMemoryBytes p99.9 = %v, want > 0 after converting records", req, v)
		}
		if _, ok := got[rm+`messageconversionstimems{quantile="0.50",request="`+req+`"}`]; !ok {
			t.Errorf("%s MessageConversionsTimeMs quantiles missing", req)
		}
	}
	for _, req := range []string{"FetchConsumer", "Metadata", "ApiVersions"} {
		for _, h := range []string{"messageconversionstimems_count", "temporarymemorybytes_count"} {
			if _, ok := got[rm+h+`{request="`+req+`"}`]; ok {
				t.Errorf("%s%s{request=%q} exported: Kafka has these for Produce and Fetch only", rm, h, req)
			}
		}
	}
}
