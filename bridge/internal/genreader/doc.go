// Command genreader writes bridge/js/reader/01_consts.js, the constants the page-side reader shares
// with the bridge, from bridge/internal/readerjs (where they are written once). go generate
// ./bridge runs it; with -check it writes nothing and fails when the file is not what it would
// write (make gen-check).
//
// Usage: genreader [-check] DST
package main
