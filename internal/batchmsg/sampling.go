package batchmsg

import (
	"strconv"

	"github.com/evalsched/evalsched/internal/sampling"
)

var samplingFields = []string{"moe", "confidence", "min_per_stratum", "window"}

// sampling reads the optional "sampling" object: moe and confidence
// required numbers, min_per_stratum an optional integer (default
// sampling.DefaultMinPerStratum), window an optional integer (default 0:
// no cap), each in the range sampling.Params allows.
func (p *parser) sampling(at loc) (*sampling.Params, error) {
	st, err := p.openObject(at)
	if st != absent {
		p.sampled = true // valid or not, its jobs' strata are not out of place
	}
	if st != good {
		return nil, err
	}
	s := sampling.Params{MinPerStratum: sampling.DefaultMinPerStratum}
	var seen uint32
	var moe, conf state
	err = p.object(at, func(name string) error {
		if ok, err := p.known(at, samplingFields, &seen, name); !ok {
			return err
		}
		f := at.field(name)
		var err error
		switch name {
		case "moe":
			s.MOE, moe, err = p.numberIn(f, sampling.MinMOE, sampling.MaxMOE)
		case "confidence":
			s.Confidence, conf, err = p.numberIn(f, sampling.MinConfidence, sampling.MaxConfidence)
		case "min_per_stratum":
			var st state
			var n int
			if n, st, err = p.intIn(f, 1, sampling.MaxMinPerStratum); st == good {
				s.MinPerStratum = n
			}
		case "window":
			var st state
			var n int
			if n, st, err = p.intIn(f, 0, sampling.MaxWindow); st == good {
				s.Window = n
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, r := range []struct {
		name string
		st   state
	}{{"moe", moe}, {"confidence", conf}} {
		if r.st == absent {
			if err := p.fail(at.field(r.name), "required"); err != nil {
				return nil, err
			}
		}
	}
	return &s, nil
}

// numberIn reads a JSON number in lo..hi.
func (p *parser) numberIn(at loc, lo, hi float64) (float64, state, error) {
	t, err := p.next(at)
	if err != nil {
		return 0, bad, err
	}
	switch t.kind {
	case tNull:
		return 0, absent, nil
	case tNumber:
	default:
		return 0, bad, p.wrongType(at, t, "a number")
	}
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil || f < lo || f > hi {
		return 0, bad, p.fail(at, "%s is outside %v..%v", clip(t.text), lo, hi)
	}
	return f, good, nil
}

// sampledJobs checks (with p.sampled: the message has a non-null sampling,
// valid or not) the rules between a batch's sampling and its jobs:
// a sampled batch estimates one model's pass rate, so its jobs run the
// message's model, and every job names its stratum; a stratum outside a
// sampled batch would do nothing, so it is an error too.
func (p *parser) sampledJobs(m Message) error {
	if m.Sampling != nil && m.Model == "" {
		if err := p.fail(loc{name: "model"}, "required in a sampled batch"); err != nil {
			return err
		}
	}
	for i, j := range m.Jobs {
		at := loc{name: jobPath(i)}
		var err error
		switch {
		case !p.sampled && j.Stratum != "":
			err = p.fail(at.field("stratum"), "only in a sampled batch (the message has no sampling)")
		case m.Sampling != nil && j.Stratum == "":
			err = p.fail(at.field("stratum"), "required in a sampled batch")
		case m.Sampling != nil && m.Model != "" && j.Model != "" && j.Model != m.Model:
			err = p.fail(at.field("model"), "a sampled batch runs one model: must be absent or the message's model")
		}
		if err != nil {
			return err
		}
	}
	return nil
}
