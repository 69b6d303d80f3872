// Package procs reads the machine's processes from /proc (Linux): each process's parent and its
// resident set. Elsewhere, or where /proc cannot be read, it finds no processes.
package procs

import (
	"bytes"
	"os"
	"strconv"
)

// Parents maps every process of the machine to its parent, from /proc/PID/stat. A process that
// ends while it is read is left out.
func Parents() map[int]int {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]int, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command, which may hold spaces and parentheses: state, ppid, ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(string(f[1])); err == nil {
			out[pid] = pp
		}
	}
	return out
}

// RSS is the resident set of pid in bytes (VmRSS of /proc/PID/status, read from the second field
// of /proc/PID/statm); 0 when it cannot be read.
func RSS(pid int) int64 {
	statm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	g := bytes.Fields(statm)
	if len(g) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(string(g[1]), 10, 64)
	return n * int64(os.Getpagesize())
}
