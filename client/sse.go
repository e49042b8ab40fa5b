package client

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"
)

// sseEvent is one Server-Sent Event as the HTML standard's parser
// dispatches it (https://html.spec.whatwg.org/multipage/server-sent-events.html).
type sseEvent struct {
	// Name is the event type; "message" when the event named none.
	Name string
	// Data is the data lines joined by "\n".
	Data string
	// ID is the last event ID seen so far on the stream (sticky, as the
	// standard says), "" when none.
	ID string
}

// sseReader parses a text/event-stream.
type sseReader struct {
	r *bufio.Reader
	// lastID is the last event ID field seen.
	lastID string
	// retry is the reconnection time the stream asked for (0: none).
	retry time.Duration
	// started: the first line was read (only it may carry a BOM).
	started bool
	// pendingCR: the last line ended with a CR, so a LF next is the rest
	// of its CRLF. Remembered rather than peeked at: a peek would wait for
	// the next byte, holding back an event ended by a bare CR.
	pendingCR bool
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// maxSSELine bounds one line of the stream: a progress record is small.
const maxSSELine = 1 << 20

// readLine returns a line without its terminator (CRLF, LF or CR).
func (s *sseReader) readLine() (string, error) {
	var b strings.Builder
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				// A last line without terminator is incomplete: the
				// standard drops an event not ended by a blank line,
				// which the caller does on EOF.
				return b.String(), io.ErrUnexpectedEOF
			}
			return "", err
		}
		if s.pendingCR {
			s.pendingCR = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			s.pendingCR = true
			return b.String(), nil
		}
		if b.Len() >= maxSSELine {
			return "", errSSELineTooLong
		}
		b.WriteByte(c)
	}
}

type sseError string

func (e sseError) Error() string { return string(e) }

const errSSELineTooLong = sseError("docrender: event stream line too long")

// next returns the next event; io.EOF when the stream ends (an event not
// completed by a blank line is dropped, as the standard says).
func (s *sseReader) next() (sseEvent, error) {
	var (
		name    string
		data    strings.Builder
		hasData bool
	)
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			return sseEvent{}, err
		}
		if !s.started {
			// A byte order mark may open the stream.
			line = strings.TrimPrefix(line, "\ufeff")
			s.started = true
		}
		if line == "" {
			if !hasData {
				// The standard: no data, no event; the name resets.
				name = ""
				continue
			}
			if name == "" {
				name = "message"
			}
			return sseEvent{Name: name, Data: data.String(), ID: s.lastID}, nil
		}
		if line[0] == ':' {
			continue // a comment (keep-alive)
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			name = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				s.lastID = value
			}
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms >= 0 && strings.Trim(value, "0123456789") == "" {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}
