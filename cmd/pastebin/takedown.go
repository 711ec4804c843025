package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"pastebin/paste"
	"pastebin/store"
)

// operatorFlags are what every operator action says: why, and whether the reason is legal.
type operatorFlags struct {
	conn   connConfig
	reason string
	legal  bool
	asJSON bool
}

func (o *operatorFlags) register(fs *flag.FlagSet) {
	o.conn.register(fs)
	fs.StringVar(&o.reason, "reason", "", "why, for the audit log (required)")
	fs.BoolVar(&o.legal, "legal", false, "the reason is a legal one: readers of what is taken down get 451")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
}

// parseOperator parses args, whose one positional argument (a code or a hash) may come before or
// after the flags, and returns it ("" when there is none).
func parseOperator(fs *flag.FlagSet, args []string, getenv func(string) string) (string, error) {
	if err := parseFlags(fs, args, getenv); err != nil {
		return "", err
	}
	var arg string
	if fs.NArg() > 0 {
		arg = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", err
		}
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return arg, nil
}

// cliActor names the operator of the command line in the audit log: the system user and host.
func cliActor() store.Actor {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return store.Actor{Name: "cli:" + name + "@" + host, Via: store.ViaCLI}
}

// withOperator opens PostgreSQL and Redis (an operator action never touches S3) and runs fn. Only
// warnings are logged unless asked: the output is the action's result.
func (o *operatorFlags) withOperator(ctx context.Context, stdout io.Writer, fn func(*services, *slog.Logger) error) error {
	if o.conn.logLevel == "info" {
		o.conn.logLevel = "warn"
	}
	logger, err := o.conn.newLogger(stdout)
	if err != nil {
		return err
	}
	svc, err := o.conn.openWithoutS3(ctx, logger)
	if err != nil {
		return err
	}
	defer svc.close()
	return fn(svc, logger)
}

// remover runs the operators' removals as the API does (paste.Remover): what they take down is
// marked gone in the cache before they return. Without S3, the blob deleter of a running serve
// finds the blobs they freed in the outbox.
func remover(svc *services, logger *slog.Logger) *paste.Remover {
	return paste.NewRemover(svc.store, svc.cache, nil, logger)
}

// unconfirmed explains a removal that committed but whose cache marker could not be written: a
// server may still serve a cached copy until the same command, run again, writes it.
func unconfirmed(err error) error {
	var u *paste.UnconfirmedError
	if errors.As(err, &u) {
		return fmt.Errorf("done in the database, but the cache could not be told, so a server may still serve what was taken down: run the same command again: %w", u.Err)
	}
	return err
}

// runTakedown takes a paste down: pastebin takedown CODE -reason ... [-legal] [-block].
func runTakedown(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o operatorFlags
	var block bool
	fs := newFlagSet("takedown CODE", "Takes a paste down, as its owner's delete with an operator's reason; with -block, also blocks its\ncontent, which takes down every paste of it and refuses it on create.", stdout)
	o.register(fs)
	fs.BoolVar(&block, "block", false, "also block the paste's content, taking down every paste of it")
	code, err := parseOperator(fs, args, getenv)
	if err != nil {
		return err
	}
	if code == "" || strings.TrimSpace(o.reason) == "" {
		return errors.New("usage: pastebin takedown CODE -reason WHY [-legal] [-block]")
	}
	return o.withOperator(ctx, stdout, func(svc *services, logger *slog.Logger) error {
		res, err := remover(svc, logger).TakeDown(ctx, store.Takedown{Code: code, Reason: o.reason, Legal: o.legal, Block: block}, cliActor())
		if err != nil {
			return fmt.Errorf("take down %s: %w", code, unconfirmed(err))
		}
		out := map[string]any{"code": code, "taken_down": res.TakenDown, "blocked": res.Blocked,
			"pastes_taken_down": len(res.Codes), "content_freed": res.FreedContent, "content_hash": hex.EncodeToString(res.ContentHash)}
		what := "was gone already"
		if res.TakenDown {
			what = "taken down"
		}
		return o.print(stdout, out, fmt.Sprintf("%s %s; %d paste(s) taken down in all, content blocked: %v", code, what, len(res.Codes), res.Blocked))
	})
}

// runBlock blocks content: pastebin block (HASH | -code CODE) -reason ... [-legal] [-take-down].
func runBlock(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o operatorFlags
	var code string
	var takeDown bool
	fs := newFlagSet("block (HASH | -code CODE)", "Blocks content by its SHA-256 or as a paste's content: creates of it are refused (451).", stdout)
	o.register(fs)
	fs.StringVar(&code, "code", "", "block the content of this paste instead of naming its hash")
	fs.BoolVar(&takeDown, "take-down", false, "take down every paste of the content now")
	arg, err := parseOperator(fs, args, getenv)
	if err != nil {
		return err
	}
	b := store.Block{Code: code, Reason: o.reason, Legal: o.legal, TakeDown: takeDown}
	if (arg == "") == (code == "") || strings.TrimSpace(o.reason) == "" {
		return errors.New("usage: pastebin block (HASH | -code CODE) -reason WHY [-legal] [-take-down]")
	}
	if arg != "" {
		if b.ContentHash, err = store.ParseContentHash(strings.ToLower(arg)); err != nil {
			return err
		}
	}
	return o.withOperator(ctx, stdout, func(svc *services, logger *slog.Logger) error {
		res, err := remover(svc, logger).Block(ctx, b, cliActor())
		if err != nil {
			return fmt.Errorf("block: %w", unconfirmed(err))
		}
		hash := hex.EncodeToString(res.ContentHash)
		out := map[string]any{"content_hash": hash, "added": res.Added, "pastes_taken_down": len(res.Codes), "content_freed": res.FreedContent}
		return o.print(stdout, out, fmt.Sprintf("%s blocked (new: %v); %d paste(s) taken down", hash, res.Added, len(res.Codes)))
	})
}

// runUnblock lets content be stored again: pastebin unblock HASH -reason ....
func runUnblock(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o operatorFlags
	fs := newFlagSet("unblock HASH", "Lets blocked content be stored again; pastes taken down stay down.", stdout)
	o.register(fs)
	arg, err := parseOperator(fs, args, getenv)
	if err != nil {
		return err
	}
	hash, err := store.ParseContentHash(strings.ToLower(arg))
	if err != nil {
		return fmt.Errorf("usage: pastebin unblock HASH -reason WHY: %w", err)
	}
	if strings.TrimSpace(o.reason) == "" {
		return errors.New("usage: pastebin unblock HASH -reason WHY")
	}
	return o.withOperator(ctx, stdout, func(svc *services, _ *slog.Logger) error {
		removed, err := svc.store.Unblock(ctx, hash, o.reason, cliActor())
		if err != nil {
			return fmt.Errorf("unblock: %w", err)
		}
		out := map[string]any{"content_hash": arg, "removed": removed}
		return o.print(stdout, out, fmt.Sprintf("%s unblocked (it was blocked: %v)", strings.ToLower(arg), removed))
	})
}

func (o *operatorFlags) print(w io.Writer, v map[string]any, text string) error {
	if o.asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}
