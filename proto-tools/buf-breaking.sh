#!/usr/bin/env bash
# buf breaking on protos/ against what main already has (make proto-breaking, part of make lint).
#
# A casino runs for years: records written by one release are read by the next, and devices and
# services are upgraded one at a time. buf.yaml's breaking rules (FILE) judge two comparisons:
#
# 1. the working tree against HEAD, when protos/ or buf.yaml have uncommitted changes: the
#    incompatible change a developer is about to commit;
# 2. the working tree against the base: the incompatible change that landed. The base is
#    - PROTO_AGAINST when set (any commit-ish: `make lint PROTO_AGAINST=v1.4.0`);
#    - else, on a branch off PROTO_MAIN (default main), the merge-base with it: all the branch
#      changed, however many commits;
#    - else HEAD~1, main's previous commit (for a merge, its first parent: main before the merge).
#    In CI's fresh clone of main the working tree is HEAD, so this is HEAD against HEAD~1.
#
# It skips with a message, and exits 0, where there is nothing to compare against: not a git work
# tree, no commit yet, a base that is not in this clone (the first commit, a shallow clone, an
# unknown ref), a base without protos/. No network: buf reads the commits from this repository's
# own .git (a file:// clone), named by full commit id.
#
# A deliberate break (rare: prefer a new field, a new message or a jackpot.v2 package) lands with
# the rule and file in buf.yaml's breaking.ignore_only, in the same commit: the working tree's
# buf.yaml configures both comparisons.
#
# Environment: BUF (default proto-tools/node_modules/.bin/buf), PROTO_AGAINST, PROTO_MAIN.
set -euo pipefail

say() { printf 'proto-breaking: %s\n' "$*"; }
skip() {
  say "skipped: $*"
  exit 0
}

if ! top=$(git rev-parse --show-toplevel 2>/dev/null); then
  skip "$(pwd) is not a git work tree, so there is no previous commit to compare protos/ with"
fi
cd "$top"
buf=${BUF:-proto-tools/node_modules/.bin/buf}
[ -x "$buf" ] || { say "no buf at $buf: make setup installs it (proto-tools/package.json)" >&2; exit 2; }
[ -d protos ] || { say "no protos/ in $top" >&2; exit 2; }

commit() { git rev-parse --verify --quiet --end-of-options "$1^{commit}" 2>/dev/null; }

head=$(commit HEAD) || skip "no commit yet: nothing to compare protos/ with"

failed=0
check() { # check <commit> <what>: the working tree against that commit's protos/
  local id=$1 what=$2
  if ! git cat-file -e "$id:protos" 2>/dev/null; then
    say "skipped against $what ${id:0:12}: it has no protos/"
    return 0
  fi
  if "$buf" breaking --against ".git#ref=$id,subdir=protos"; then
    say "ok: the working tree against $what ${id:0:12}"
  else
    say "FAILED: incompatible with $what ${id:0:12} (see above; buf.yaml breaking, FILE rules)" >&2
    failed=1
  fi
}

if [ -n "$(git status --porcelain --untracked-files=all -- protos buf.yaml)" ]; then
  check "$head" "HEAD (uncommitted changes)"
fi

main=${PROTO_MAIN:-main}
if [ -n "${PROTO_AGAINST:-}" ]; then
  ref=$PROTO_AGAINST
  why="PROTO_AGAINST"
elif main_id=$(commit "$main") && fork=$(git merge-base "$head" "$main_id") \
  && [ "$fork" != "$head" ]; then
  ref=$fork
  why="the merge-base with $main"
else
  ref=HEAD~1
  why="the previous commit"
fi
if ! base=$(commit "$ref"); then
  if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    say "skipped: $ref ($why) is not in this shallow clone; git fetch --unshallow to check it"
  else
    say "skipped: $ref ($why) is not a commit of this clone (the first commit, or an unknown ref)"
  fi
elif [ "$base" != "$head" ]; then
  check "$base" "$why"
fi
exit "$failed"
