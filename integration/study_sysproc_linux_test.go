package integration

import "syscall"

// The cluster script gets SIGTERM (and stops its brokers and ZooKeeper) when the test binary
// dies, even when go test -timeout kills it.
func studySysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
