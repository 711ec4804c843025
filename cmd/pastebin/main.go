// Command pastebin serves the pastebin HTTP API with its embedded expiry workers, and runs the
// operator commands: migrate, cleanup, fsck, takedown, block, unblock, key; and, as an HTTP client of a
// server, put, get and delete.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "pastebin: %v\n", err)
		os.Exit(1)
	}
}

const usage = `usage: pastebin <command> [flags]

commands:
  serve     serve the HTTP API and run the cleanup workers
  migrate   apply database migrations (up, down, status)
  cleanup   run one cleanup now and print its report (--dry-run: the backlog only)
  sweep     delete orphan blobs older than the grace period and report them
  fsck      check invariants 1-3 (ref counts, blobs, orphans, outbox) on a live deployment;
            exits non-zero on a problem (--repair: fix ref counts, queue orphans; --json)
  takedown  take a paste down: takedown CODE --reason WHY [--legal] [--block]
  block     block content: block (HASH | --code CODE) --reason WHY [--legal] [--take-down]
  unblock   let blocked content be stored again: unblock HASH [--reason WHY]
  key       creator keys: key create --label L [--rate 120/1m] | key list | key revoke ID
            | key takedown ID --reason WHY [--legal] [--revoke]

client commands (they speak HTTP to a server, -server or PASTEBIN_SERVER):
  put       create a paste: put [--encrypt] [--password P] [--burn | --max-views N]
            [--expires-in D] [--title T] FILE|-   prints its URL, and its delete token on stderr
  get       print a paste's text: get [--password P] URL   (decrypts when URL has its #key)
  delete    delete a paste: delete URL TOKEN

Run 'pastebin <command> -h' for the flags of a command.
`

// run is the whole program; main only calls it, so tests can too.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stdout, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[1], args[2:]
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, rest, getenv, stdout)
	case "migrate":
		err = runMigrate(ctx, rest, getenv, stdout)
	case "cleanup":
		err = runCleanup(ctx, rest, getenv, stdout)
	case "sweep":
		err = runSweep(ctx, rest, getenv, stdout)
	case "fsck":
		err = runFsck(ctx, rest, getenv, stdout)
	case "takedown":
		err = runTakedown(ctx, rest, getenv, stdout)
	case "block":
		err = runBlock(ctx, rest, getenv, stdout)
	case "unblock":
		err = runUnblock(ctx, rest, getenv, stdout)
	case "key":
		err = runKey(ctx, rest, getenv, stdout)
	case "put":
		err = runPut(ctx, rest, getenv, terminalIO(stdout))
	case "get":
		err = runGet(ctx, rest, getenv, terminalIO(stdout))
	case "delete":
		err = runDelete(ctx, rest, getenv, terminalIO(stdout))
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stdout, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
