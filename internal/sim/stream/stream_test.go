package stream

import "testing"

func TestStreamsIndependent(t *testing.T) {
	// Neighbouring keys and tags give unrelated streams.
	a := New(7, Job, 41).Uint64()
	b := New(7, Job, 42).Uint64()
	c := New(7, Calls, 41).Uint64()
	d := New(8, Job, 41).Uint64()
	if a == b || a == c || a == d {
		t.Errorf("streams collide: %x %x %x %x", a, b, c, d)
	}
	if New(7, Job, 41).Uint64() != a {
		t.Error("the same stream twice differs")
	}
}
