package sim

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// laneOracle is what the family's judge reads of a lane's sweep: every
// point it ran (the judge picks the oracle at dynamic's own bar,
// laneOracleAt) and, for a lane whose provider's capacity drops, the
// drops and the twin bound's best blocked share (TwinResult.Best; -1 when
// no row of the bound kept its throughput). It is what OracleCache keeps.
type laneOracle struct {
	Points   []sweep `json:"points"`
	Drops    []Drop  `json:"drops,omitempty"`
	TwinBest float64 `json:"twin_best"`
}

// sweepLane runs sc's family sweep, and its twin bound when it has a drop.
func sweepLane(sc *scenario.Scenario) (laneOracle, error) {
	o, err := findOracle(sc, false, familyRule)
	if err != nil {
		return laneOracle{}, err
	}
	lo := laneOracle{Points: o.Points, TwinBest: -1}
	if _, drops := twinOf(sc); len(drops) > 0 {
		tr, err := twinBound(sc, 0, o)
		if err != nil {
			return laneOracle{}, err
		}
		lo.Drops, lo.TwinBest = tr.Drops, tr.Best
	}
	return lo, nil
}

// OracleCache is a directory keeping each family lane's oracle, so a
// developer changing the controller reruns only policy dynamic: the
// static sweep, most of a lane's runs, depends on the lane and the
// simulator, never on the dynamic policy. A file is named by the lane and
// a hash of its scenario, so a changed generator or flag
// (--configured-concurrency) misses; a change to the simulator's engine or
// to policy static is not seen, and the directory must be emptied then.
// "" keeps nothing: every lane sweeps.
type OracleCache string

// oracleCacheVersion is in every key: bump it when laneOracle or the
// oracle's sweep changes.
const oracleCacheVersion = "evalsched oracle cache v3, every point with its work, refined within 0.05 and 0.10, twin bound"

// oracle returns sc's oracle: from the cache, else swept (and kept).
func (c OracleCache) oracle(sc *scenario.Scenario) (laneOracle, error) {
	if c == "" {
		return sweepLane(sc)
	}
	spec, err := json.Marshal(sc)
	if err != nil {
		return laneOracle{}, fmt.Errorf("oracle cache: %w", err)
	}
	sum := sha256.Sum256(append([]byte(oracleCacheVersion+"\n"), spec...))
	path := filepath.Join(string(c), fmt.Sprintf("%s-%x.json", sc.Name, sum[:8]))
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		var lo laneOracle
		why := "no points"
		if err := json.Unmarshal(b, &lo); err != nil {
			why = err.Error()
		} else if len(lo.Points) > 0 {
			return lo, nil
		}
		return laneOracle{}, fmt.Errorf("oracle cache: %s is not a kept oracle (%s); delete it to sweep the lane again", path, why)
	case !errors.Is(err, fs.ErrNotExist):
		return laneOracle{}, fmt.Errorf("oracle cache: %w", err)
	}
	lo, err := sweepLane(sc)
	if err != nil {
		return laneOracle{}, err
	}
	if b, err = json.Marshal(lo); err != nil {
		return laneOracle{}, fmt.Errorf("oracle cache: %w", err)
	}
	// Written whole, then renamed: a run stopped mid-write, or a second
	// run sharing the directory, never reads half a file.
	tmp, err := os.CreateTemp(string(c), ".oracle-*")
	if err != nil {
		return laneOracle{}, fmt.Errorf("oracle cache: %w", err)
	}
	_, err = tmp.Write(b)
	if err = errors.Join(err, tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return laneOracle{}, fmt.Errorf("oracle cache: %w", err)
	}
	return lo, nil
}
