package main

import "syscall"

// hideSelf makes the grader non-dumpable (prctl PR_SET_DUMPABLE 0): its
// /proc/<pid>/environ and mem become root's, and ptrace needs
// CAP_SYS_PTRACE, so an agent running as the same user cannot read the
// expected answer or the result token from it.
func hideSelf() {
	const prSetDumpable = 4
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
}

// agentAttr runs the agent as nobody when the grader runs as root, and
// kills it if the grader dies.
func agentAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if syscall.Getuid() == 0 {
		a.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	return a
}
