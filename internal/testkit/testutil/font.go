package testutil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

// Lying web fonts for the reader's font check (issue 40): an honest TrueType font whose character
// map is rewritten so that characters draw other characters' glyphs. Only the cmap table changes;
// the outlines are the font's own.

// BaseFont is the honest font the lying fonts are made from: Open Sans (Debian's fonts-open-sans,
// which scripts/setup installs), none of the reader's reference fonts.
const BaseFont = "/usr/share/fonts/truetype/open-sans/OpenSans-Regular.ttf"

// Lie maps a character to the character whose glyph the lying font draws for it; a character
// mapped to itself draws honestly, and one not in the map draws honestly too.
type Lie map[rune]rune

// OneShape draws every ASCII letter and digit as 'x'.
func OneShape() Lie {
	l := Lie{}
	for r := rune('0'); r <= 'z'; r++ {
		if r <= '9' || (r >= 'A' && r <= 'Z') || r >= 'a' {
			l[r] = 'x'
		}
	}
	return l
}

// Rot13 draws each letter as the letter thirteen places on (a permutation); digits are honest.
func Rot13() Lie {
	l := Lie{}
	for r := rune('a'); r <= 'z'; r++ {
		l[r] = 'a' + (r-'a'+13)%26
		l[r-'a'+'A'] = 'A' + (r-'a'+13)%26
	}
	return l
}

// DigitSwap draws each digit as another (5 as 8, 7 as 4, ...); letters are honest.
func DigitSwap() Lie {
	to := "3759816402" // 0 draws 3, 1 draws 7, ...
	l := Lie{}
	for i, r := range to {
		l['0'+rune(i)] = r
	}
	return l
}

// Sentence draws hidden as shown (same length): each character of hidden draws the glyph of the
// character at its place in shown. It fails when hidden repeats a character where shown does not.
func Sentence(hidden, shown string) (Lie, error) {
	h, s := []rune(hidden), []rune(shown)
	if len(h) != len(s) {
		return nil, fmt.Errorf("hidden has %d characters, shown %d", len(h), len(s))
	}
	l := Lie{}
	for i, r := range h {
		if w, ok := l[r]; ok && w != s[i] {
			return nil, fmt.Errorf("%q at %d would draw both %q and %q", r, i, w, s[i])
		}
		l[r] = s[i]
	}
	return l, nil
}

// LyingFont is the font at base (a TrueType or OpenType file with a Windows Unicode BMP cmap)
// with its character map rewritten by lie, for the printable ASCII characters, Latin-1 and every
// character of lie.
func LyingFont(base string, lie Lie) ([]byte, error) {
	b, err := os.ReadFile(base)
	if err != nil {
		return nil, err
	}
	return rewriteCmap(b, lie)
}

type sfntTable struct {
	tag  string
	data []byte
}

func rewriteCmap(b []byte, lie Lie) ([]byte, error) {
	if len(b) < 12 {
		return nil, errors.New("font too short")
	}
	n := int(binary.BigEndian.Uint16(b[4:]))
	var tables []sfntTable
	var cmap []byte
	for i := 0; i < n; i++ {
		rec := b[12+16*i:]
		tag := string(rec[:4])
		off, ln := binary.BigEndian.Uint32(rec[8:]), binary.BigEndian.Uint32(rec[12:])
		if int(off)+int(ln) > len(b) {
			return nil, fmt.Errorf("table %s out of the file", tag)
		}
		data := b[off : off+ln]
		if tag == "cmap" {
			cmap = data
		}
		tables = append(tables, sfntTable{tag, data})
	}
	if cmap == nil {
		return nil, errors.New("no cmap")
	}
	glyph, err := cmap4(cmap)
	if err != nil {
		return nil, err
	}
	m := map[uint16]uint16{}
	for r := rune(0x20); r <= 0xFF; r++ {
		if g := glyph(r); g != 0 {
			m[uint16(r)] = g
		}
	}
	for r, w := range lie {
		if r > 0xFFFF {
			return nil, fmt.Errorf("%q is past the BMP", r)
		}
		m[uint16(r)] = glyph(w) // a character drawn as one the font lacks draws nothing
	}
	for i := range tables {
		if tables[i].tag == "cmap" {
			tables[i].data = buildCmap4(m)
		}
	}
	return writeSfnt(b[:4], tables), nil
}

// cmap4 returns the glyph lookup of the font's format 4 subtable (platform 3, encoding 1, or
// Unicode platform 0).
func cmap4(c []byte) (func(rune) uint16, error) {
	n := int(binary.BigEndian.Uint16(c[2:]))
	for i := 0; i < n; i++ {
		rec := c[4+8*i:]
		pid, eid := binary.BigEndian.Uint16(rec), binary.BigEndian.Uint16(rec[2:])
		off := binary.BigEndian.Uint32(rec[4:])
		if !(pid == 3 && eid == 1) && pid != 0 {
			continue
		}
		st := c[off:]
		if binary.BigEndian.Uint16(st) != 4 {
			continue
		}
		seg := int(binary.BigEndian.Uint16(st[6:])) / 2
		ends, starts := st[14:], st[16+2*seg:]
		deltas, ranges := st[16+4*seg:], st[16+6*seg:]
		return func(r rune) uint16 {
			if r > 0xFFFF {
				return 0
			}
			for k := 0; k < seg; k++ {
				end := rune(binary.BigEndian.Uint16(ends[2*k:]))
				if r > end {
					continue
				}
				start := rune(binary.BigEndian.Uint16(starts[2*k:]))
				if r < start {
					return 0
				}
				delta := binary.BigEndian.Uint16(deltas[2*k:])
				ro := int(binary.BigEndian.Uint16(ranges[2*k:]))
				if ro == 0 {
					return uint16(r) + delta
				}
				p := 2*k + ro + 2*int(r-start)
				g := binary.BigEndian.Uint16(ranges[p:])
				if g == 0 {
					return 0
				}
				return g + delta
			}
			return 0
		}, nil
	}
	return nil, errors.New("no format 4 Unicode cmap")
}

// buildCmap4 is a cmap table with one format 4 subtable (platform 3, encoding 1): a segment a
// character.
func buildCmap4(m map[uint16]uint16) []byte {
	var cs []uint16
	for c := range m {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	seg := len(cs) + 1
	p2, lg := 1, 0
	for p2*2 <= seg {
		p2 *= 2
		lg++
	}
	st := make([]byte, 16+8*seg)
	be := binary.BigEndian
	be.PutUint16(st, 4)
	be.PutUint16(st[2:], uint16(len(st)))
	be.PutUint16(st[6:], uint16(2*seg))
	be.PutUint16(st[8:], uint16(2*p2))
	be.PutUint16(st[10:], uint16(lg))
	be.PutUint16(st[12:], uint16(2*seg-2*p2))
	ends, starts, deltas := st[14:], st[16+2*seg:], st[16+4*seg:]
	for i, c := range cs {
		be.PutUint16(ends[2*i:], c)
		be.PutUint16(starts[2*i:], c)
		be.PutUint16(deltas[2*i:], m[c]-c)
	}
	be.PutUint16(ends[2*(seg-1):], 0xFFFF)
	be.PutUint16(starts[2*(seg-1):], 0xFFFF)
	be.PutUint16(deltas[2*(seg-1):], 1)
	out := make([]byte, 12, 12+len(st))
	be.PutUint16(out[2:], 1)
	be.PutUint16(out[4:], 3)
	be.PutUint16(out[6:], 1)
	be.PutUint32(out[8:], 12)
	return append(out, st...)
}

// writeSfnt lays the tables out again, each on four bytes, with their checksums.
func writeSfnt(version []byte, tables []sfntTable) []byte {
	be := binary.BigEndian
	sort.Slice(tables, func(i, j int) bool { return tables[i].tag < tables[j].tag })
	n := len(tables)
	p2, lg := 1, 0
	for p2*2 <= n {
		p2 *= 2
		lg++
	}
	head := make([]byte, 12+16*n)
	copy(head, version)
	be.PutUint16(head[4:], uint16(n))
	be.PutUint16(head[6:], uint16(16*p2))
	be.PutUint16(head[8:], uint16(lg))
	be.PutUint16(head[10:], uint16(16*n-16*p2))
	out := head
	for i, t := range tables {
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
		rec := out[12+16*i:]
		copy(rec, t.tag)
		data := t.data
		if t.tag == "head" && len(data) >= 12 {
			data = append([]byte(nil), data...)
			be.PutUint32(data[8:], 0) // checkSumAdjustment, not recomputed
		}
		be.PutUint32(rec[4:], checksum(data))
		be.PutUint32(rec[8:], uint32(len(out)))
		be.PutUint32(rec[12:], uint32(len(data)))
		out = append(out, data...)
	}
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	return out
}

func checksum(b []byte) uint32 {
	var s uint32
	for i := 0; i < len(b); i += 4 {
		var w [4]byte
		copy(w[:], b[i:])
		s += binary.BigEndian.Uint32(w[:])
	}
	return s
}
