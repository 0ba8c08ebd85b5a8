package broker

// metrics_coordinators.go — the controller's, ZooKeeper client's and coordinators' metrics:
// kafka.controller (controller/metrics.go), kafka.server SessionExpireListener and
// ZooKeeperClientMetrics (zkmeta/metrics.go), and kafka.coordinator.group
// GroupMetadataManager / kafka.coordinator.transaction TransactionMarkerChannelManager read
// here from the coordinators, which start on first use (0 until then).

import (
	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/coordinator/transaction"
	"github.com/samsa-kafka/samsa/internal/metrics"
)

// registerControlMetrics registers the controller, ZooKeeper and coordinator metrics.
func (b *Broker) registerControlMetrics(reg *metrics.Registry) {
	if b.ctrl != nil {
		b.ctrl.RegisterMetrics(reg)
	}
	if b.zk != nil {
		b.zk.RegisterMetrics(reg)
	}
	if b.apis != nil {
		registerCoordinatorMetrics(reg, b.apis)
	}
}

// registerCoordinatorMetrics registers GroupMetadataManager's and
// TransactionMarkerChannelManager's gauges over a's coordinators.
func registerCoordinatorMetrics(reg *metrics.Registry, a *APIs) {
	groupStats := func() group.Stats {
		a.services.mu.Lock()
		c := a.services.groups
		a.services.mu.Unlock()
		if c == nil {
			return group.Stats{}
		}
		return c.Stats()
	}
	const gmm = "GroupMetadataManager"
	reg.GaugeFunc("coordinator_group", gmm, "NumGroups", "Groups cached by this broker's group coordinator",
		func() float64 { return float64(groupStats().Groups) })
	reg.GaugeFunc("coordinator_group", gmm, "NumOffsets", "Committed offsets cached by this broker's group coordinator",
		func() float64 { return float64(groupStats().Offsets) })
	for _, st := range []group.State{group.PreparingRebalance, group.CompletingRebalance, group.Stable, group.Dead, group.Empty} {
		reg.GaugeFunc("coordinator_group", gmm, "NumGroups"+st.String(), "Cached groups in state "+st.String(),
			func() float64 { return float64(groupStats().ByState[st]) })
	}

	markerStats := func() transaction.MarkerStats {
		a.services.mu.Lock()
		c := a.services.txns
		a.services.mu.Unlock()
		if c == nil {
			return transaction.MarkerStats{}
		}
		return c.MarkerStats()
	}
	const tmcm = "TransactionMarkerChannelManager"
	reg.GaugeFunc("coordinator_transaction", tmcm, "UnknownDestinationQueueSize",
		"Transaction markers waiting for their partition's leader to be known",
		func() float64 { return float64(markerStats().UnknownDestinationQueueSize) })
	reg.GaugeFunc("coordinator_transaction", tmcm, "LogAppendRetryQueueSize",
		"Transaction completions waiting to retry their transaction log append",
		func() float64 { return float64(markerStats().LogAppendRetryQueueSize) })
}
