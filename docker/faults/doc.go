// Package faults drives network-partition and ZooKeeper-ensemble fault scenarios against a
// compose cluster of real containers (docker/compose.yaml: a three-node ZooKeeper ensemble and
// three samsa brokers) and checks what acks=all idempotent producers were promised: every
// acknowledged record read back exactly once, in order, at its offset, and never two leaders
// of one partition accepting writes at the same time.
//
// The scenarios are tests behind the dockertest build tag, so `go test ./...` stays fast; run
// them with docker/test-partitions.sh, which builds the images, starts the cluster under its
// own compose project and runs `go test -tags dockertest ./docker/faults/`. The faults
// themselves are docker/partition/net.sh's (iptables rules in a container's network
// namespace, docker pause/kill/network disconnect); the checker (checker.go) has no docker
// dependency and is unit-tested without it.
package faults
