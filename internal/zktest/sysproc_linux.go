package zktest

import "syscall"

// The JVM dies with the test binary, even when it panics or is killed (go test -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
