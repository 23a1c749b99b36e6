package capacity

import (
	"fmt"
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		cap     int
		demands []int
		want    []int
	}{
		{"one demand takes all", 100, []int{500}, []int{100}},
		{"one busy model among idle ones", 100, []int{0, 500, 0}, []int{0, 100, 0}},
		{"equal split", 90, []int{50, 50, 50}, []int{30, 30, 30}},
		{"small demands met first, rest shared", 100, []int{10, 80, 5, 80}, []int{10, 43, 5, 42}},
		{"met demand frees room for the next", 10, []int{1, 2, 100, 100}, []int{1, 2, 4, 3}},
		{"remainder to lower index on ties", 10, []int{5, 5, 5}, []int{4, 3, 3}},
		{"remainder to largest unmet demand", 10, []int{4, 9, 6}, []int{3, 4, 3}},
		{"remainder to the three largest", 11, []int{4, 9, 6, 7}, []int{2, 3, 3, 3}},
		{"one unit, many demands", 1, []int{3, 7, 7}, []int{0, 1, 0}},
		{"cap larger than total", 1000, []int{3, 0, 7}, []int{3, 0, 7}},
		{"cap equal to total", 10, []int{3, 7}, []int{3, 7}},
		{"negative demands count as zero", 10, []int{-5, 20, -1}, []int{0, 10, 0}},
		{"all demands zero", 10, []int{0, 0}, []int{0, 0}},
		{"zero cap", 0, []int{5, 5}, []int{0, 0}},
		{"negative cap", -3, []int{5, 5}, []int{0, 0}},
		{"no demands", 10, []int{}, []int{}},
		{"nil demands", 10, nil, []int{}},
		{"huge values do not overflow", 1 << 62, []int{1 << 62, 1 << 62, 1}, []int{1 << 61, 1<<61 - 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Split(tt.cap, tt.demands); !slices.Equal(got, tt.want) {
				t.Errorf("Split(%d, %v) = %v, want %v", tt.cap, tt.demands, got, tt.want)
			}
		})
	}
}

// FuzzSplit reads demands as little-endian int16 pairs, negatives included.
func FuzzSplit(f *testing.F) {
	f.Add(100, []byte{10, 0, 80, 0, 5, 0, 80, 0})
	f.Add(10, []byte{5, 0, 5, 0, 5, 0})
	f.Add(1, []byte{0xff, 0xff, 7, 0, 7, 0})
	f.Add(-4, []byte{1, 2, 3, 4})
	f.Add(1<<40, []byte{0xff, 0x7f})
	f.Fuzz(func(t *testing.T, cap int, data []byte) {
		var demands []int
		for i := 0; i+1 < len(data) && len(demands) < 64; i += 2 {
			demands = append(demands, int(int16(uint16(data[i])|uint16(data[i+1])<<8)))
		}
		input := slices.Clone(demands)
		got := Split(cap, demands)

		if !slices.Equal(demands, input) {
			t.Fatalf("Split changed its input: %v, want %v", demands, input)
		}
		if len(got) != len(demands) {
			t.Fatalf("len = %d, want %d", len(got), len(demands))
		}
		want := func(i int) int { return max(demands[i], 0) }
		sum, total, top := 0, 0, 0
		for i, g := range got {
			if g < 0 || g > want(i) {
				t.Errorf("result[%d] = %d, want 0..%d", i, g, want(i))
			}
			sum += g
			total += want(i)
			top = max(top, g)
		}
		if w := min(max(cap, 0), total); sum != w {
			t.Errorf("sum = %d, want %d", sum, w)
		}
		for i, g := range got {
			if g == want(i) {
				continue
			}
			// Max-min fair: an unmet demand trails no share by more than one.
			if g < top-1 {
				t.Errorf("unmet result[%d] = %d, want >= %d (largest share %d minus 1)", i, g, top-1, top)
			}
			// The extra unit went to a larger unmet demand, or an equal one
			// earlier in the input.
			for j, h := range got {
				if h > g && want(j) < want(i) || h > g && want(j) == want(i) && j > i {
					t.Errorf("result[%d] = %d (demand %d) > result[%d] = %d (demand %d): extra unit to the wrong demand",
						j, h, want(j), i, g, want(i))
				}
			}
		}
		if again := Split(cap, demands); !slices.Equal(again, got) {
			t.Errorf("second Split = %v, want %v", again, got)
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	demands := make([]int, 241)
	for i := range demands {
		demands[i] = (i * 7919) % 400 // spread of small and large demands
	}
	for _, cap := range []int{5000, 50000} {
		b.Run(fmt.Sprintf("cap=%d", cap), func(b *testing.B) {
			for b.Loop() {
				Split(cap, demands)
			}
		})
	}
}
