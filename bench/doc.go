// Package bench holds the project's cross-package benchmarks: the policy engine's Decide on a
// realistic URL mix, the lookup preset end to end (guarded, in process) against a plain
// playwright-go script doing the same navigations and reads, the cold start and peak RSS of the
// browser-agent binary, and its peak RSS and run budget under a page of 300 images of 5 MiB.
// BENCHMARKS.md gives the figures and the commands that reproduce them.
//
// The package has no API; everything is in its _test.go files. Benchmarks never assert
// wall-clock limits.
package bench
