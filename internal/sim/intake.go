package sim

import (
	"time"

	"github.com/evalsched/evalsched/internal/sim/faults"
)

// SQS, as the faulted simulation shows it to the intake function: batches
// in parts, out of order, some delivered twice.

// intakeMsg is one SQS message of a batch on its way to the intake
// function: jobs lo..hi-1 of batch bi.
type intakeMsg struct {
	batch  int32
	lo, hi int32
}

// intake delivers batch bi as SQS does: a big batch comes in parts, in
// any order, and a message may come twice. Half the batches come in 2 to 5
// parts, shuffled, a few seconds apart; half have a part (or the whole
// batch) delivered again up to ten minutes later.
func (c *chaos) intake(bi int) {
	e, p := c.d.e, c.plan
	n := e.batches[bi].n
	parts := int32(1)
	if p.Chance(faults.Intake, 0.5) {
		parts = min(n, 2+int32(p.Draw(faults.Intake).IntN(4)))
	}
	order := make([]int32, parts)
	for i := range order {
		order[i] = int32(i)
	}
	p.Draw(faults.Intake).Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			p.Count(faults.Intake) // parts out of order
			break
		}
	}
	part := func(k int32) intakeMsg {
		return intakeMsg{batch: int32(bi), lo: n * k / parts, hi: n * (k + 1) / parts}
	}
	at := e.now
	for i, k := range order {
		if i > 0 {
			at += p.Between(faults.Intake, 0, 20*time.Second)
		}
		c.send(part(k), at)
	}
	if p.Chance(faults.Intake, 0.5) {
		p.Count(faults.Intake) // redelivered
		m := intakeMsg{batch: int32(bi), lo: 0, hi: n}
		if k := int32(p.Draw(faults.Intake).IntN(int(parts) + 1)); k < parts {
			m = part(k)
		}
		c.send(m, e.now+p.Between(faults.Intake, 5*time.Second, 10*time.Minute))
	}
}

func (c *chaos) send(m intakeMsg, at time.Duration) {
	if at == c.d.e.now {
		c.d.submit(int(m.batch), m.lo, m.hi)
		c.d.checkStore("after a batch message")
		return
	}
	c.intakes = append(c.intakes, m)
	c.d.e.schedule(at, evIntake, int32(len(c.intakes)-1))
}

func (c *chaos) deliverIntake(i int32) {
	m := c.intakes[i]
	c.d.submit(int(m.batch), m.lo, m.hi)
	c.d.checkStore("after a batch message")
}
