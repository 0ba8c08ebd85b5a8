package integration

import "syscall"

// Broker processes die with the test binary, even when it panics or go test -timeout kills it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
