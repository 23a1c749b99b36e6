package status

import "testing"

// The cells of status's MODEL and BATCH tables (from TestPinStatusWhy of
// cmd/evalsched, where they were checked before the views moved here).
func TestCells(t *testing.T) {
	for _, c := range []struct {
		set  int
		seen float64
		want string
		age  float64
	}{{0, 0, "-", -1}, {250, 0, "250 set", -1}, {0, 240, "240 learned 3m ago", 180}, {250, 240.4, "250 set, 240 learned 3m ago", 180}, {0, 12, "12 learned at no time given", -1}} {
		if got := concText(c.set, c.seen, c.age); got != c.want {
			t.Errorf("concText(%d, %g, %g) = %q, want %q", c.set, c.seen, c.age, got, c.want)
		}
	}
	for _, c := range []struct {
		steer, operator float64
		want            string
	}{{10, 10, "10"}, {2, 40, "2 of 40"}, {0.25, 10, "0.25 of 10"}} {
		if got := targetText(c.steer, c.operator); got != c.want {
			t.Errorf("targetText(%g, %g) = %q, want %q", c.steer, c.operator, got, c.want)
		}
	}
	if got := admittedOf(412, 1000); got != "412/1000 (41%)" {
		t.Errorf("admittedOf(412, 1000) = %q", got)
	}

}
