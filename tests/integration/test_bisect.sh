#!/usr/bin/env bash
# test_bisect.sh LEAKGATE INCLUDE_DIR LIBLEAKGATE BISECT_STEP — `git bisect run` finds the commit
# that leaked: a repository of ten commits of a small C program gated with `leakgate exec`, in
# which commit 7 keeps a tagged buffer every session and commit 4 does not build (skipped). The
# test passes only when git bisect names commit 7 exactly, and the step said good, bad and skip.
set -euo pipefail
leakgate=$1 include=$2 lib=$3 step=$4
work=$(mktemp -d /tmp/lgbisect.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
  GIT_COMMITTER_EMAIL=t@example.com GIT_CONFIG_NOSYSTEM=1 HOME=$work
git init -q -b main .

# the program: four measured sessions after a warm-up, each with a tagged scratch buffer
write() {
  cat > trainer.c <<EOF
#include <leakgate.h>
#include <stdlib.h>
#include <string.h>
static char *kept[16];
int main(void)
{
    for (int s = 0; s < 5; s++) {
        leakgate_session_begin();
        leakgate_tag_push("act/scratch");
        char *buf = malloc($1);
        leakgate_tag_pop();
        memset(buf, s, $1);
        $2
        leakgate_session_end();
    }
    return kept[0] == (char *)1; /* 0: kept is read, so the buffers stay reachable */
}
EOF
}
commit() { git add trainer.c && git commit -q -m "$1"; }
write "64 << 10" "free(buf);"; commit "1: the trainer"
write "96 << 10" "free(buf);"; commit "2: a bigger buffer"
write "96 << 10" "free(buf); /* done */"; commit "3: a comment"
write "96 << 10" "free(buf) /* a typo */"; commit "4: does not build"
write "96 << 10" "free(buf);"; commit "5: builds again"
write "128 << 10" "free(buf);"; commit "6: bigger again"
write "128 << 10" "kept[s] = buf; /* for a report, later */"; commit "7: keeps the buffer"
for k in 8 9 10; do echo "/* $k */" >> trainer.c; commit "$k: more"; done
leaky=$(git log --format=%h --grep '^7:')

build="cc -o trainer trainer.c -I$include -L$(dirname "$lib") -lleakgate -Wl,-rpath,$(dirname "$lib")"
git bisect start HEAD "$(git log --format=%h --grep '^1:')"
git bisect run "$step" --build "$build" -- \
  "$leakgate" exec --quiet --no-reports --sessions 4 --out "$work/gate" -- ./trainer > bisect.log 2>&1 || true
cat bisect.log
found=$(sed -n 's/^\([0-9a-f]\{7,\}\) is the first bad commit$/\1/p' bisect.log)
git bisect reset -q >/dev/null 2>&1 || git bisect reset >/dev/null
[ -n "$found" ] || { echo "FAIL: git bisect named no commit"; exit 1; }
[ "$(git rev-parse "$found")" = "$(git rev-parse "$leaky")" ] ||
  { echo "FAIL: git bisect named $found, not commit 7 ($leaky)"; exit 1; }
grep -q -- '-> good (0)' bisect.log || { echo "FAIL: no step said good"; exit 1; }
grep -q -- '-> bad (1)' bisect.log || { echo "FAIL: no step said bad"; exit 1; }
# the skips, step by step: a commit that does not build, and a verdict that is inconclusive
git checkout -q "$(git log main --format=%h --grep '^4:')"
set +e
"$step" --build "$build" -- "$leakgate" exec --quiet --no-reports --out "$work/gate" -- ./trainer
[ $? = 125 ] || { echo "FAIL: a commit that does not build is not skipped"; exit 1; }
git checkout -q "$(git log main --format=%h --grep '^5:')"
"$step" --build "$build" -- "$leakgate" exec --quiet --no-reports --sessions 40 --out "$work/gate" \
  -- ./trainer > step.log 2>&1
[ $? = 125 ] && grep -q 'leakgate said inconclusive -> skip (125)' step.log ||
  { cat step.log; echo "FAIL: an inconclusive verdict (4 of 40 sessions) is not skipped"; exit 1; }
set -e
git checkout -q main
echo "PASS: git bisect run found commit 7 ($leaky); a broken build and an inconclusive verdict are skipped"
