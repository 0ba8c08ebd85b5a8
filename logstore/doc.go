// Package logstore is the partition log on disk, mirroring Kafka's kafka.log package:
// UnifiedLog/LocalLog (log.go), LogSegment (segment.go), OffsetIndex and TimeIndex
// (index.go), TransactionIndex (txn_index.go), ProducerStateManager (producer_state.go),
// the partition side of transactions — ongoing transactions, last stable offset,
// VerificationGuard, transaction markers (txn.go) —, LogManager (manager.go), LogCleaner
// (cleaner.go) and the checkpoint files (checkpoint.go). Files keep Kafka's byte formats so
// Kafka's own tools can read them. All file access goes through the FS seam (fs.go);
// CrashFS (crashfs.go) is a file system that can lose what was not fsynced, for the
// simulation and power-cut tests.
//
// logstore knows no network, no ZooKeeper and no cluster.
package logstore
