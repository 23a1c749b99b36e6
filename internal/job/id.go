package job

import (
	"crypto/sha256"
	"encoding/hex"
)

// JobID derives a job's id from its batch and key: stable, so a redelivered
// message maps to the same job, and 32 characters, so it fits ECS's startedBy
// (at most 36).
func JobID(account, project, batch, key string) string {
	h := sha256.New()
	for _, s := range []string{account, project, batch, key} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
