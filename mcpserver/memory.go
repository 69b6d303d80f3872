package mcpserver

import (
	"os"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/procs"
)

// DefaultMemoryLimit bounds the resident memory of one session's browser processes
// (Config.MemoryLimit). Measured on PostgreSQL's manual (BenchmarkMCPSoak, BENCHMARKS.md "MCP
// soak"; sums of VmRSS, so pages Chromium's processes share count once per process): the server
// alone holds about 60 MB; with a fresh browser session its tree holds 780-880 MB, and up to
// about 1,065 MB after a browser session's 200 calls of mixed reads; issue 49 measured 1,385 MB
// after 216. 1 GiB for the browser's own tree lets an ordinary session run to its budgets and
// keeps one server with its browser near 1.1 GB, within the 1.5 GB the soak asks for.
const DefaultMemoryLimit int64 = 1 << 30

// pider is a browser that knows the process ID of its Chromium (internal/guarded's Browser).
type pider interface{ PID() int }

// BrowserMemory is the resident memory (the sum of VmRSS, in bytes) of b's processes: the
// process tree under this server's child that holds b's Chromium (the Playwright driver, which
// started Chromium, and everything under it). ok is false when b does not say its process or
// /proc cannot tell.
func BrowserMemory(b coordinator.Browser) (int64, bool) {
	p, ok := b.(pider)
	if !ok || p.PID() <= 0 {
		return 0, false
	}
	table := scanProcs()
	self := os.Getpid()
	root := p.PID()
	// Up to this server's own child: the driver that started Chromium, when it is ours.
	for i := 0; i < 64; i++ {
		pr, ok := table[root]
		if !ok {
			return 0, false
		}
		if pr.ppid == self || pr.ppid <= 1 {
			break
		}
		root = pr.ppid
	}
	return table.treeRSS(root), true
}

// TreeMemory is the resident memory (sum of VmRSS, bytes) of pid and every process under it.
func TreeMemory(pid int) int64 { return scanProcs().treeRSS(pid) }

type proc struct {
	ppid int
	rss  int64 // bytes
}

type procTable map[int]proc

// scanProcs reads the parent and resident set of every process in /proc.
func scanProcs() procTable {
	out := procTable{}
	for pid, ppid := range procs.Parents() {
		out[pid] = proc{ppid: ppid, rss: procs.RSS(pid)}
	}
	return out
}

// treeRSS sums the resident sets of root and its descendants.
func (t procTable) treeRSS(root int) int64 {
	kids := map[int][]int{}
	for pid, p := range t {
		kids[p.ppid] = append(kids[p.ppid], pid)
	}
	var sum int64
	seen := map[int]bool{}
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		sum += t[pid].rss
		stack = append(stack, kids[pid]...)
	}
	return sum
}
