package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"pastebin/api"
	"pastebin/paste"
	"pastebin/store"
)

const keyUsage = "usage: pastebin key create -label LABEL [-rate 120/1m] | key list | key revoke ID [-reason WHY] | key takedown ID -reason WHY [-legal] [-revoke]"

// runKey runs the creator key commands, as the other operator commands do (takedown.go): on the
// database itself, audited as the command line's user and host.
func runKey(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(keyUsage)
	}
	switch args[0] {
	case "create":
		return runKeyCreate(ctx, args[1:], getenv, stdout)
	case "list":
		return runKeyList(ctx, args[1:], getenv, stdout)
	case "revoke":
		return runKeyRevoke(ctx, args[1:], getenv, stdout)
	case "takedown":
		return runKeyTakedown(ctx, args[1:], getenv, stdout)
	}
	return fmt.Errorf("unknown key command %q: %s", args[0], keyUsage)
}

func keys(svc *services, logger *slog.Logger) *paste.Keys {
	return paste.NewKeys(svc.store, remover(svc, logger), time.Now)
}

// runKeyCreate mints a key and prints its secret, the one time it is shown.
func runKeyCreate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o operatorFlags
	var label, rate string
	fs := newFlagSet("key create -label LABEL", "Mints a creator key and prints it, this once: only its SHA-256 is kept.", stdout)
	o.register(fs)
	fs.StringVar(&label, "label", "", "who holds the key, or what for (required)")
	fs.StringVar(&rate, "rate", "120/1m", `the key's create rate, counted across replicas: such as 120/1m, or "off"`)
	if arg, err := parseOperator(fs, args, getenv); err != nil || arg != "" {
		return cmpErr(err, keyUsage)
	}
	r, err := api.ParseRate(rate)
	label = strings.TrimSpace(label)
	if err != nil || label == "" || len(label) > 200 {
		return fmt.Errorf("%s (a label of 1 to 200 bytes, a rate such as 120/1m)", keyUsage)
	}
	return o.withOperator(ctx, stdout, func(svc *services, logger *slog.Logger) error {
		k, secret, err := keys(svc, logger).Mint(ctx, label, r.String(), cliActor())
		if err != nil {
			return fmt.Errorf("mint a key: %w", err)
		}
		out := map[string]any{"id": k.ID, "key": secret, "label": k.Label, "created_at": k.CreatedAt, "create_rate": k.CreateRate}
		return o.print(stdout, out, fmt.Sprintf("%s\nkey %d (%s), rate %s: give it to its holder now, it is not shown again", secret, k.ID, k.Label, k.CreateRate))
	})
}

// runKeyList prints every key without its secret.
func runKeyList(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o operatorFlags
	fs := newFlagSet("key list", "Lists the creator keys, newest first: never their secrets.", stdout)
	o.register(fs)
	if arg, err := parseOperator(fs, args, getenv); err != nil || arg != "" {
		return cmpErr(err, keyUsage)
	}
	return o.withOperator(ctx, stdout, func(svc *services, _ *slog.Logger) error {
		list, err := svc.store.CreatorKeys(ctx)
		if err != nil {
			return fmt.Errorf("list keys: %w", err)
		}
		if o.asJSON {
			return o.print(stdout, map[string]any{"keys": list}, "")
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLABEL\tCREATED\tLAST USED\tPASTES\tRATE\tSTATE")
		for _, k := range list {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", k.ID, k.Label, k.CreatedAt.UTC().Format(time.DateTime), when(k.LastUsedAt, "never"),
				k.Pastes, k.CreateRate, strings.Replace(when(k.RevokedAt, "active"), "20", "revoked 20", 1))
		}
		return tw.Flush()
	})
}

func when(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.DateTime)
}

// runKeyRevoke revokes a key: no create with it commits from then on.
func runKeyRevoke(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o operatorFlags
	fs := newFlagSet("key revoke ID", "Revokes a creator key: every server refuses it within seconds, and no create with it commits from now on.", stdout)
	o.register(fs)
	id, err := keyIDArg(fs, args, getenv)
	if err != nil {
		return err
	}
	return o.withOperator(ctx, stdout, func(svc *services, logger *slog.Logger) error {
		rev, err := keys(svc, logger).Revoke(ctx, id, o.reason, cliActor())
		if err != nil {
			return fmt.Errorf("revoke key %d: %w", id, err)
		}
		out := map[string]any{"id": id, "revoked": true, "revoked_now": rev.Revoked, "pastes": rev.Pastes}
		return o.print(stdout, out, fmt.Sprintf("key %d revoked (now: %v); %d of its pastes are not removed", id, rev.Revoked, rev.Pastes))
	})
}

// runKeyTakedown takes down every paste a key created.
func runKeyTakedown(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o operatorFlags
	var revoke bool
	fs := newFlagSet("key takedown ID -reason WHY", "Takes down every paste a creator key created, in one transaction; with -revoke, revokes the key in it too.", stdout)
	o.register(fs)
	fs.BoolVar(&revoke, "revoke", false, "also revoke the key")
	id, err := keyIDArg(fs, args, getenv)
	if err != nil {
		return err
	}
	if strings.TrimSpace(o.reason) == "" {
		return errors.New(keyUsage)
	}
	return o.withOperator(ctx, stdout, func(svc *services, logger *slog.Logger) error {
		res, err := keys(svc, logger).TakeDown(ctx, store.KeyTakedown{ID: id, Reason: o.reason, Legal: o.legal, Revoke: revoke}, cliActor())
		if err != nil {
			return fmt.Errorf("take down the pastes of key %d: %w", id, unconfirmed(err))
		}
		out := map[string]any{"id": id, "pastes_taken_down": len(res.Codes), "content_freed": res.FreedContent, "revoked_now": res.Revoked}
		return o.print(stdout, out, fmt.Sprintf("%d paste(s) of key %d taken down; revoked now: %v", len(res.Codes), id, res.Revoked))
	})
}

// keyIDArg parses the flags and the one key id among args.
func keyIDArg(fs *flag.FlagSet, args []string, getenv func(string) string) (int64, error) {
	arg, err := parseOperator(fs, args, getenv)
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("%s (ID is a key's number, as key list shows it)", keyUsage)
	}
	return id, nil
}

func cmpErr(err error, usage string) error {
	if err != nil {
		return err
	}
	return errors.New(usage)
}
