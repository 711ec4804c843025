package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// runMigrate applies (up, the default), rolls back (down) or lists (status) migrations.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var conn connConfig
	fs := newFlagSet("migrate", "Applies (up, the default), rolls back (down) or lists (status) database migrations:\n  pastebin migrate [flags] [up|down|status]", stdout)
	conn.registerDatabase(fs)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	logger, err := conn.newLogger(stdout)
	if err != nil {
		return err
	}
	st, err := conn.openMigrator(ctx, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	switch action := fs.Arg(0); action {
	case "", "up":
		v, err := st.Migrate(ctx)
		if err == nil {
			fmt.Fprintf(stdout, "database at version %d\n", v)
		}
		return err
	case "down":
		v, err := st.MigrateDown(ctx)
		if err == nil {
			fmt.Fprintf(stdout, "database at version %d\n", v)
		}
		return err
	case "status":
		status, err := st.MigrationStatus(ctx)
		for _, s := range status {
			fmt.Fprintf(stdout, "%-8s %s\n", s.State, s.Source.Path)
		}
		return err
	default:
		return fmt.Errorf("migrate: unknown action %q (want up, down or status)", action)
	}
}

// migrateAtStart applies pending migrations before serve starts, over svc's connections unless
// migrations have a URL of their own.
func migrateAtStart(ctx context.Context, conn connConfig, svc *services, logger *slog.Logger) error {
	st := svc.store
	if conn.migrateURL != "" || conn.pooler != "" {
		var err error
		if st, err = conn.openMigrator(ctx, logger); err != nil {
			return err
		}
		defer st.Close()
	}
	version, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	logger.Info("database migrated", "version", version)
	return nil
}
