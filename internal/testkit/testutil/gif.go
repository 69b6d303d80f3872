package testutil

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
)

// FlickerGIF is a data: URL of an endless animated GIF of w x h px that turns from black to
// white and back every 20 ms: something on a page that draws by itself, whatever the page's
// clocks (the visibility proof's movers, issue 25).
func FlickerGIF(w, h int) string {
	pal := color.Palette{color.Black, color.White}
	var g gif.GIF
	for i := range 2 {
		m := image.NewPaletted(image.Rect(0, 0, w, h), pal)
		for k := range m.Pix {
			m.Pix[k] = uint8(i)
		}
		g.Image, g.Delay = append(g.Image, m), append(g.Delay, 2)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, &g); err != nil {
		panic(err) // an in-memory encode of two paletted frames does not fail
	}
	return "data:image/gif;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}
