package store

// The statements whose plans the index test checks.
const (
	ClaimSQL      = lockExpiredSQL
	ResetStuckSQL = resetStuckSQL
	PurgeSQL      = purgeTombstonesSQL
)
