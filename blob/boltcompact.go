package blob

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// compactMinBytes is the size of bolt file below which compacting it is not worth a start's time.
const compactMinBytes = 64 << 20

// openStore opens the bolt file at path, holding its lock. When most of a file of at least
// minBytes is free pages, it is first rewritten without them: bolt reuses a page that a delete
// freed but never gives it back, so the file would stay the size of the most the store ever held.
// A compaction that fails (a full disk) leaves the file as it was, to be tried again next start.
func openStore(path string, minBytes int64) (*bolt.DB, error) {
	db, err := openLocked(path)
	if err != nil {
		return nil, err
	}
	// Holding the lock, nobody else is compacting: a copy left is one a crash cut short.
	if err := os.Remove(compactingPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		db.Close()
		return nil, err
	}
	if !mostlyFree(db, minBytes) || compact(db, path) != nil {
		return db, nil
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	return openLocked(path)
}

// openLocked opens the bolt file at path and takes its lock, waiting up to 2 s for another process
// to let it go. A lock taken on a file that a compaction replaced in the meantime is let go, and
// the file now at path opened instead.
func openLocked(path string) (*bolt.DB, error) {
	for range 3 {
		before, err := os.Stat(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		// Without a timeout a second process on the same file would wait for the lock forever.
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w (%s)", ErrEmbeddedBusy, filepath.Dir(path))
		}
		if err != nil {
			return nil, err
		}
		if after, err := os.Stat(path); err == nil && (before == nil || os.SameFile(before, after)) {
			return db, nil
		}
		db.Close()
	}
	return nil, fmt.Errorf("%w (%s: replaced while opened)", ErrEmbeddedBusy, filepath.Dir(path))
}

// mostlyFree says whether the file is at least minBytes and more than half of it free pages.
func mostlyFree(db *bolt.DB, minBytes int64) bool {
	info, err := os.Stat(db.Path())
	if err != nil || info.Size() < minBytes {
		return false
	}
	free := int64(db.Stats().FreePageN) * int64(db.Info().PageSize)
	return free*2 > info.Size()
}

func compactingPath(path string) string { return path + ".compacting" }

// compact writes db's contents to a new file, flushed to disk, and renames it over path. db stays
// open, and locked, on the file it had.
func compact(db *bolt.DB, path string) (err error) {
	tmp := compactingPath(path)
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{NoSync: true}) // flushed once, below
	if err != nil {
		return err
	}
	err = bolt.Compact(dst, db, 64<<20)
	if err == nil {
		err = dst.Sync()
	}
	if err = errors.Join(err, dst.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir flushes the folder's entries (a name renamed into it) to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
