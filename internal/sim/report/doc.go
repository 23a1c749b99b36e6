// Package report renders the simulator's results: the side-by-side table
// of `evalsched sim` (WriteTable) and its notes, the one-line summaries of
// a faults run (WriteSummary), the family's per-lane lines and verdict
// (WriteFamily), and the self-contained HTML page with hand-drawn SVG
// charts of --report (WriteHTML).
//
// # Where it sits
//
// Above the engine: it reads internal/sim's results (Result, LaneResult,
// FamilySummary) and nothing reads it but cmd/evalsched; the engine never
// imports it. It only formats: every number it prints was measured by the
// engine, so the same results print the same bytes.
package report
