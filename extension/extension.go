// Package extension holds the Chrome side panel (a Manifest V3 extension, loaded unpacked from
// this folder) and embeds the one file the live-demo page shares with it: render.js, the renderer
// of steps and results and the run-stream code, which package web serves as /static/render.js.
package extension

import _ "embed"

// RenderJS is render.js, the renderer the side panel and the live-demo page share.
//
//go:embed render.js
var RenderJS string
