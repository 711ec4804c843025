package store

// The statements whose plans the index test checks.
const (
	ClaimSQL      = pickExpiredSQL
	ResetStuckSQL = resetStuckSQL
	PurgeSQL      = purgeTombstonesSQL
)
