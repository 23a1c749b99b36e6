package batchmsg

import (
	"errors"
	"fmt"
)

// Split is the inverse of Parse over a multi-part batch: it packs a batch's
// jobs, in order, into as few messages as the contract allows — each under
// MaxMessageBytes and MaxJobs — numbered part 1..parts (no part fields when
// one message holds them all). fields is one JSON object of the batch's
// fields but part, parts and jobs, as json.Marshal writes it; each job is one
// job's JSON object, copied as it is. Split checks sizes, not the fields'
// rules: Parse each part for those, as the intake will.
func Split(fields []byte, jobs [][]byte) ([]Part, error) {
	return split(fields, jobs, MaxMessageBytes, MaxJobs, MaxParts)
}

// Part is one message of a split batch: Body holds jobs[From:To].
type Part struct {
	Body     []byte
	From, To int
}

// PartsError is a batch that needs more messages than the contract's Max
// (MaxParts).
type PartsError struct{ Parts, Max int }

func (e *PartsError) Error() string {
	return fmt.Sprintf("the batch needs %d parts, more than the contract's %d", e.Parts, e.Max)
}

// partFields is the most a part adds to the batch's fields and its jobs (one
// comma each): the part numbers at their widest and the jobs array.
const partFields = `,"part":10000,"parts":10000,"jobs":[]}`

// MaxJobBytes is the largest job, in bytes, that fits in a part beside the
// batch's fields.
func MaxJobBytes(fields []byte) int {
	return MaxMessageBytes - (len(fields) - 1 + len(partFields)) - 1
}

func split(fields []byte, jobs [][]byte, maxBytes, maxJobs, maxParts int) ([]Part, error) {
	if len(fields) < 3 || fields[0] != '{' || fields[len(fields)-1] != '}' {
		return nil, errors.New("batchmsg: split: the batch's fields must be one JSON object with at least one field, as json.Marshal writes it")
	}
	head := fields[:len(fields)-1] // the part numbers, the jobs and the closing brace follow
	overhead := len(head) + len(partFields)

	// 1. Spans: as many jobs as fit under the limit, at most maxJobs each.
	var spans [][2]int // jobs[from:to] of each part
	from, size := 0, overhead
	for i, j := range jobs {
		n := len(j) + 1 // and a comma
		if overhead+n > maxBytes {
			return nil, fmt.Errorf("batchmsg: split: job %d of %d bytes does not fit in a message (at most %d with the batch's fields)", i, len(j), maxBytes-overhead-1)
		}
		if size+n > maxBytes || i-from == maxJobs {
			spans = append(spans, [2]int{from, i})
			from, size = i, overhead
		}
		size += n
	}
	if from < len(jobs) {
		spans = append(spans, [2]int{from, len(jobs)})
	}
	if len(spans) > maxParts {
		return nil, &PartsError{Parts: len(spans), Max: maxParts}
	}

	// 2. Bodies: the fields, the part numbers when there are several, and
	// the jobs as they are.
	parts := make([]Part, len(spans))
	for k, s := range spans {
		parts[k] = Part{Body: partBody(head, k+1, len(spans), jobs[s[0]:s[1]]), From: s[0], To: s[1]}
	}
	return parts, nil
}

func partBody(head []byte, n, of int, jobs [][]byte) []byte {
	size := len(head) + 40
	for _, j := range jobs {
		size += len(j) + 1
	}
	body := make([]byte, 0, size)
	body = append(body, head...)
	if of > 1 {
		body = fmt.Appendf(body, `,"part":%d,"parts":%d`, n, of)
	}
	body = append(body, `,"jobs":[`...)
	for i, j := range jobs {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, j...)
	}
	return append(body, "]}"...)
}
