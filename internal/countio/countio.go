// Package countio counts the bytes read through a reader: the run's byte budgets of the bridge
// and of the egress proxy both count response bodies with it.
package countio

import "io"

// Reader passes r through and calls add with the size of every read that returned bytes, before
// the read returns.
func Reader(r io.Reader, add func(n int64)) io.Reader { return &reader{r: r, add: add} }

type reader struct {
	r   io.Reader
	add func(int64)
}

func (c *reader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}
