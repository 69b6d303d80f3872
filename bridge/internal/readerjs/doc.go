// Package readerjs holds the constants the bridge's reader (bridge/js/reader, run in the page)
// and its Go side share: the verdict codes the pixel phase passes back per text run, the reader's
// modes and paint modes, and the marks the reader puts in a frame's text. They are written once,
// here; bridge/js/reader/01_consts.js is generated from Consts (go generate ./bridge runs
// bridge/internal/genreader; make gen-check and this package's test fail when the two drift).
// It imports nothing of the module: layer 0, below bridge.
package readerjs
