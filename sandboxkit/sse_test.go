package sandboxkit

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// readAll reads events until an error; it returns them and the error.
func readAll(s *SSEReader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestSSEReader(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{
		{"one event", "data: hi\n\n", []Event{{Data: "hi"}}, io.EOF},
		{"no space after the colon", "data:hi\n\n", []Event{{Data: "hi"}}, io.EOF},
		{"only one space is dropped", "data:  hi\n\n", []Event{{Data: " hi"}}, io.EOF},
		{"multi-line data joins with LF", "data: a\ndata: b\ndata:\n\n", []Event{{Data: "a\nb\n"}}, io.EOF},
		{"comments are skipped", ": keep-alive\ndata: x\n: more\n\n:ping\n\n", []Event{{Data: "x"}}, io.EOF},
		{"CRLF", "data: a\r\ndata: b\r\n\r\n", []Event{{Data: "a\nb"}}, io.EOF},
		{"lone CR", "data: a\rdata: b\r\r", []Event{{Data: "a\nb"}}, io.EOF},
		{"event, id and retry", "event: delta\nid: 7\nretry: 1500\ndata: x\n\n", []Event{{Type: "delta", ID: "7", Retry: 1500, Data: "x"}}, io.EOF},
		{"a field without a colon", "data\n\n", []Event{{Data: ""}}, io.EOF},
		{"unknown fields are ignored", "foo: bar\ndata: x\n\n", []Event{{Data: "x"}}, io.EOF},
		{"an event without data is not dispatched", "event: ping\n\ndata: x\n\n", []Event{{Data: "x"}}, io.EOF},
		{"a byte-order mark is skipped", "\uFEFFdata: x\n\n", []Event{{Data: "x"}}, io.EOF},
		{"[DONE] ends the stream", "data: a\n\ndata: [DONE]\n\ndata: after\n\n", []Event{{Data: "a"}}, ErrDone},
		{"[DONE] must be the whole data", "data: [DONE] \n\n", []Event{{Data: "[DONE] "}}, io.EOF},
		{"cut inside an event", "data: a\n\ndata: b\n", []Event{{Data: "a"}}, io.ErrUnexpectedEOF},
		{"cut inside a line", "data: a\n\ndata: b", []Event{{Data: "a"}}, io.ErrUnexpectedEOF},
		{"empty stream", "", nil, io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(NewSSEReader(strings.NewReader(c.in), 0))
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d events %+v, want %+v", len(got), got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("event %d: got %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestSSEReaderBoundsMemory(t *testing.T) {
	long := "data: " + strings.Repeat("x", 5000) + "\n\n"
	if _, err := NewSSEReader(strings.NewReader(long), 2048).Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("a 5000-byte line under a 2048-byte limit: error %v, want ErrEventTooLarge", err)
	}
	many := strings.Repeat("data: "+strings.Repeat("y", 500)+"\n", 10) + "\n"
	if _, err := NewSSEReader(strings.NewReader(many), 2048).Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("10 data lines of 500 bytes under a 2048-byte limit: error %v, want ErrEventTooLarge", err)
	}
}

// A CRLF split across two reads is one line end, not a line end and an
// empty line: an empty line would dispatch the event early.
func TestSSEReaderCRLFAcrossReads(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		for _, part := range []string{"data: a\r", "\ndata: b\r", "\n\r", "\n"} {
			pw.Write([]byte(part))
		}
		pw.Close()
	}()
	got, err := readAll(NewSSEReader(pr, 0))
	if err != io.EOF || len(got) != 1 || got[0].Data != "a\nb" {
		t.Fatalf("got %+v, %v; want one event \"a\\nb\" then EOF", got, err)
	}
}

// Next returns each event as soon as its blank line arrives, before the
// stream sends more: a reader that waited for a full buffer would hold the
// first token back.
func TestSSEReaderIsIncremental(t *testing.T) {
	pr, pw := io.Pipe()
	s := NewSSEReader(pr, 0)
	go pw.Write([]byte("data: first\n\n"))
	ev, err := s.Next()
	if err != nil || ev.Data != "first" {
		t.Fatalf("got %+v, %v; want the first event while the stream is still open", ev, err)
	}
	go func() { pw.Write([]byte("data: second\n\n")); pw.Close() }()
	if ev, err = s.Next(); err != nil || ev.Data != "second" {
		t.Fatalf("got %+v, %v; want the second event", ev, err)
	}
}

// FuzzSSEReader: whatever the bytes, the reader ends with an error and never
// returns data larger than its limit; and splitting the stream into pieces
// changes nothing.
func FuzzSSEReader(f *testing.F) {
	f.Add("data: a\r\ndata: b\r\n\r\n: c\n\nevent: x\ndata: [DONE]\n\n", 3)
	f.Add("\uFEFFdata\rdata:\r\r", 1)
	f.Fuzz(func(t *testing.T, in string, cut int) {
		const limit = 1024
		whole, errWhole := readAll(NewSSEReader(strings.NewReader(in), limit))
		if errWhole == nil {
			t.Fatal("readAll ended without an error")
		}
		for _, ev := range whole {
			if len(ev.Data) > limit {
				t.Fatalf("event data of %d bytes over the %d-byte limit", len(ev.Data), limit)
			}
		}
		pieces, errPieces := readAll(NewSSEReader(&chunkedReader{s: in, n: max(cut%7, 1)}, limit))
		if len(pieces) != len(whole) || !errors.Is(errPieces, errWhole) && errPieces.Error() != errWhole.Error() {
			t.Fatalf("in pieces of %d: %d events, %v; whole: %d events, %v", max(cut%7, 1), len(pieces), errPieces, len(whole), errWhole)
		}
		for i := range whole {
			if pieces[i] != whole[i] {
				t.Fatalf("event %d in pieces %+v, whole %+v", i, pieces[i], whole[i])
			}
		}
	})
}

// chunkedReader returns at most n bytes a Read.
type chunkedReader struct {
	s string
	n int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[k:]
	return k, nil
}
