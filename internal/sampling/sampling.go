package sampling

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// The contract's bounds on a batch's sampling (docs/batch-format.md).
const (
	MinMOE               = 0.001
	MaxMOE               = 0.5
	MinConfidence        = 0.5
	MaxConfidence        = 0.999
	MaxMinPerStratum     = 10_000
	DefaultMinPerStratum = 30
	// MaxWindow bounds window (0, the default, is no cap): a cap above the
	// largest batch a store takes is no cap either.
	MaxWindow = 1_000_000
)

// Params is a batch's "sampling" object: stop once the pass rate is known
// to ±MOE at Confidence, after at least MinPerStratum results per stratum.
type Params struct {
	MOE           float64 `json:"moe"`
	Confidence    float64 `json:"confidence"`
	MinPerStratum int     `json:"min_per_stratum"`
	// Window caps the claims a sampled batch holds beyond its counted
	// prefix (0: no cap): a slow job then pauses the batch instead of
	// letting it claim jobs whose results could only count after the
	// slow one. Both stores read it; the batch contract's
	// sampling.window, the simulator's scenario field.
	Window int `json:"window,omitempty"`
}

// Validate names the first field that breaks its rule.
func (p Params) Validate() error {
	switch {
	case !(p.MOE >= MinMOE && p.MOE <= MaxMOE):
		return fmt.Errorf("moe: %v is outside %v..%v", p.MOE, MinMOE, MaxMOE)
	case !(p.Confidence >= MinConfidence && p.Confidence <= MaxConfidence):
		return fmt.Errorf("confidence: %v is outside %v..%v", p.Confidence, MinConfidence, MaxConfidence)
	case p.MinPerStratum < 1 || p.MinPerStratum > MaxMinPerStratum:
		return fmt.Errorf("min_per_stratum: %d is outside 1..%d", p.MinPerStratum, MaxMinPerStratum)
	case p.Window < 0 || p.Window > MaxWindow:
		return fmt.Errorf("window: %d is outside 0..%d", p.Window, MaxWindow)
	}
	return nil
}

// Stratum is what the store counts for one stratum of a sampled batch.
type Stratum struct {
	Name     string
	Jobs     int // N_h: the stratum's jobs in the batch
	Released int // claimed so far, whether or not their result is in
	Results  int // n_h: results recorded
	Passes   int // results that passed
}

// smoothed is p̃ = (passes+1)/(results+2): the pass rate with one
// pseudo-pass and one pseudo-fail, so no stratum's spread reads as zero
// from a few results.
func (s Stratum) smoothed() float64 {
	return float64(s.Passes+1) / float64(s.Results+2)
}

// spread is S̃_h = sqrt(p̃(1−p̃)).
func (s Stratum) spread() float64 {
	p := s.smoothed()
	return math.Sqrt(p * (1 - p))
}

// Allocate is the DynamoDB store's allocation from counts (the in-memory
// store claims by Sequence.Next). It returns how many of k new claims go
// to each stratum (same
// order as strata; callers sort strata by name so ties break the same way
// everywhere). Claims go one at a time:
//
//  1. a stratum with fewer than min(MinPerStratum, N_h) released first,
//     the one with fewest released (ties: first in order);
//  2. then the stratum whose next job cuts the estimate's variance most:
//     the largest N_h·S̃_h / sqrt(n_h·(n_h+1)), n_h its released jobs —
//     Neyman allocation (n_h ∝ N_h·S̃_h) built up greedily.
//
// A stratum with every job released gets nothing; the sum is less than k
// when the batch runs out.
func Allocate(p Params, strata []Stratum, k int) []int {
	out := make([]int, len(strata))
	for range k {
		best, bestMin := -1, false
		var bestScore float64
		for i, s := range strata {
			n := s.Released + out[i]
			if n >= s.Jobs {
				continue
			}
			if n < min(p.MinPerStratum, s.Jobs) {
				if !bestMin || n < strata[best].Released+out[best] {
					best, bestMin = i, true
				}
				continue
			}
			if bestMin {
				continue
			}
			score := float64(s.Jobs) * s.spread() / math.Sqrt(float64(n)*float64(n+1))
			if best < 0 || score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			break
		}
		out[best]++
	}
	return out
}

// Rank orders a stratum's jobs for release: the first 8 bytes of
// SHA-256(batch, 0, key) as an integer, lowest first (ties, which need a
// 64-bit collision, by key). batch is account/project/batch.
func Rank(batch, key string) uint64 {
	h := sha256.New()
	h.Write([]byte(batch))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return binary.BigEndian.Uint64(h.Sum(nil))
}
