//go:build !linux

package main

import "syscall"

// childSysProcAttr: without Linux's parent-death signal the bench's children are stopped
// only by its own shutdown.
func childSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
