//go:build unix && !linux

package integration

import "syscall"

func studySysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
