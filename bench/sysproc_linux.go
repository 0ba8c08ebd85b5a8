package main

import "syscall"

// childSysProcAttr makes the bench's children (brokers, ZooKeeper, strace) die with it, even
// when it is killed.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
