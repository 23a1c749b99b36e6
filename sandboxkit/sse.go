package sandboxkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Event is one server-sent event.
type Event struct {
	Type  string // the "event:" field; "" means "message"
	ID    string // the "id:" field
	Data  string // the "data:" lines, joined by "\n"
	Retry int    // the "retry:" field in milliseconds; 0 if absent
}

// ErrDone is returned by SSEReader.Next for the "data: [DONE]" sentinel with
// which OpenAI-compatible gateways end a stream.
var ErrDone = errors.New("sse: [DONE]")

// ErrEventTooLarge is returned when one line or one event's data exceeds the
// reader's limit: a runaway stream must not take the sandbox's memory.
var ErrEventTooLarge = errors.New("sse: event exceeds the size limit")

// SSEReader parses a text/event-stream incrementally, as the bytes arrive:
// each call to Next returns as soon as the blank line ending an event has been
// read, without waiting for more of the body. It follows the WHATWG parsing
// rules: lines end in LF, CRLF or a lone CR; a line starting with ':' is a
// comment (gateways send them as keep-alives); "field: value" loses one space
// after the colon; several data lines join with "\n"; an event with no data
// is not dispatched; a leading byte-order mark is skipped.
type SSEReader struct {
	r       *bufio.Reader
	max     int
	line    []byte
	data    bytes.Buffer
	ev      Event
	skipLF  bool // the last line ended in CR: a following LF belongs to it
	started bool
}

// NewSSEReader reads events from r; limit bounds one line and one event's
// data in bytes (at least 1 KiB; 0 means 1 MiB).
func NewSSEReader(r io.Reader, limit int) *SSEReader {
	if limit == 0 {
		limit = 1 << 20
	}
	return &SSEReader{r: bufio.NewReaderSize(r, 4096), max: max(limit, 1024)}
}

// Next returns the next event; ErrDone for "[DONE]"; io.EOF when the stream
// ends cleanly between events, io.ErrUnexpectedEOF when it ends inside one.
func (s *SSEReader) Next() (Event, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && (s.data.Len() > 0 || s.ev != (Event{})) {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if s.data.Len() == 0 {
				s.ev = Event{} // no data: nothing to dispatch
				continue
			}
			ev := s.ev
			ev.Data = string(bytes.TrimSuffix(s.data.Bytes(), []byte{'\n'}))
			s.ev, s.data = Event{}, bytes.Buffer{}
			if ev.Data == "[DONE]" {
				return ev, ErrDone
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if s.data.Len()+len(value)+1 > s.max {
				return Event{}, fmt.Errorf("%w: data over %d bytes", ErrEventTooLarge, s.max)
			}
			s.data.Write(value)
			s.data.WriteByte('\n')
		case "event":
			s.ev.Type = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.ev.ID = string(value)
			}
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				s.ev.Retry = n
			}
		}
	}
}

// readLine returns the next line without its terminator; the slice is valid
// until the next call.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				return nil, io.ErrUnexpectedEOF // a line without its end
			}
			return nil, err
		}
		if s.skipLF {
			s.skipLF = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return s.trimBOM(), nil
		case '\r':
			s.skipLF = true
			return s.trimBOM(), nil
		}
		if len(s.line) >= s.max {
			return nil, fmt.Errorf("%w: line over %d bytes", ErrEventTooLarge, s.max)
		}
		s.line = append(s.line, b)
	}
}

func (s *SSEReader) trimBOM() []byte {
	if !s.started {
		s.started = true
		return bytes.TrimPrefix(s.line, []byte("\uFEFF"))
	}
	return s.line
}
