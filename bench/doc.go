// Package bench holds the project's cross-package benchmarks: the policy engine's Decide on a
// realistic URL mix, the lookup preset end to end (guarded, in process) against a plain
// playwright-go script doing the same navigations and reads (per step too), the cold start and
// peak RSS of the browser-agent binary against a plain playwright-go program (bench/plaincold),
// and its peak RSS and run budget under a page of 300 images of 5 MiB. bench/ratio.sh (make
// bench-ratio) prints the lookup and cold-start ratios of one run with the load average.
// BENCHMARKS.md gives the figures and the commands that reproduce them.
//
// The package has no API; everything is in its _test.go files (and the plaincold command).
// Benchmarks never assert wall-clock limits.
package bench
