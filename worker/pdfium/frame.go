package pdfium

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The parent and its children (proc.go, child.go) speak in frames: a 4-byte
// big-endian length, then that many bytes. Every length is checked against
// a bound before anything is allocated for it, on both sides: a child is
// trusted no more than the PDF it read.

// errFrameTooLarge: a frame's length is past the reader's bound.
var errFrameTooLarge = errors.New("frame larger than allowed")

// readFrame reads one frame of at most limit bytes. io.EOF: the stream
// ended between frames.
func readFrame(r io.Reader, limit int64) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(h[:]))
	if n > limit {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", errFrameTooLarge, n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// writeFrame writes the parts as one frame, without joining them first
// (a PDF or a page's images are not copied again).
func writeFrame(w io.Writer, parts ...[]byte) error {
	var n uint64
	for _, p := range parts {
		n += uint64(len(p))
	}
	if n > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes", errFrameTooLarge, n)
	}
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(n))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// enc appends the fields of a message.
type enc struct{ b []byte }

func (e *enc) byte(v byte)     { e.b = append(e.b, v) }
func (e *enc) uint(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) int(v int64)     { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) string(v string) { e.uint(uint64(len(v))); e.b = append(e.b, v...) }

func (e *enc) bool(v bool) {
	if v {
		e.byte(1)
	} else {
		e.byte(0)
	}
}

func (e *enc) ints(v []int) {
	e.uint(uint64(len(v)))
	for _, x := range v {
		e.int(int64(x))
	}
}

// dec reads the fields of a message from a frame. The first error sticks:
// later reads return zero values, and err says what was wrong.
type dec struct {
	b   []byte
	err error
}

var errGarbled = errors.New("garbled frame")

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errGarbled, what)
	}
	d.b = nil
}

func (d *dec) byte() byte {
	if len(d.b) < 1 {
		d.fail("short")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) int() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes is a field of the frame itself (no copy), its length checked
// against what is left.
func (d *dec) bytes() []byte {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail("length past the end")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) string() string { return string(d.bytes()) }

func (d *dec) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad bool")
	return false
}

// ints: each takes at least a byte, so the count is bounded by what is
// left before anything is allocated.
func (d *dec) ints() []int {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail("count past the end")
		return nil
	}
	if n == 0 {
		return nil
	}
	v := make([]int, n)
	for i := range v {
		x := d.int()
		if x < math.MinInt32 || x > math.MaxInt32 {
			d.fail("number out of range")
			return nil
		}
		v[i] = int(x)
	}
	return v
}

// int32 is a small number (dpi, quality, a part).
func (d *dec) int32() int {
	x := d.int()
	if x < math.MinInt32 || x > math.MaxInt32 {
		d.fail("number out of range")
		return 0
	}
	return int(x)
}

// done fails a frame with bytes left over.
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("bytes left over")
	}
	return d.err
}
