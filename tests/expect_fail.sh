#!/bin/sh
# expect_fail.sh [OPTION]... CODE REGEX COMMAND [ARG]...
# Runs COMMAND and passes (exit 0) when it exits with status CODE and its
# stderr matches the extended regular expression REGEX (grep -E). On a
# mismatch it prints what was expected and what the command printed.
#   --stdout         match the regexes against stdout instead of stderr
#   --also REGEX     another regex that must match too (repeatable)
#   --not REGEX      a regex that must not match (repeatable)
#   --no-outputs DIR the run's outputs (config.ini, metrics.jsonl,
#                    summary.json, weights.safetensors) are removed from DIR
#                    first and must not exist there after, nor any
#                    temporary (*.partial, hidden or not)
# POSIX sh only, so it runs wherever CTest does.
set -u

usage() {
    echo "usage: expect_fail.sh [--stdout] [--also RE]... [--not RE]... [--no-outputs DIR] CODE REGEX COMMAND [ARG]..." >&2
    exit 2
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/expect_fail.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/want"
: >"$tmp/reject"
stream=stderr
outdir=
while [ $# -gt 0 ]; do
    case $1 in
    --stdout) stream=stdout; shift ;;
    --also) [ $# -ge 2 ] || usage; printf '%s\n' "$2" >>"$tmp/want"; shift 2 ;;
    --not) [ $# -ge 2 ] || usage; printf '%s\n' "$2" >>"$tmp/reject"; shift 2 ;;
    --no-outputs) [ $# -ge 2 ] || usage; outdir=$2; shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 3 ] || usage
code=$1
printf '%s\n' "$2" >>"$tmp/want"
shift 2

outputs="config.ini metrics.jsonl summary.json weights.safetensors"
if [ -n "$outdir" ]; then
    # only our own file names, never the folder: DIR comes from the test
    for f in $outputs; do rm -f "$outdir/$f" "$outdir/$f.partial"; done
fi

"$@" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?

fail=0
say() { echo "expect_fail: $*" >&2; fail=1; }
[ "$rc" = "$code" ] || say "exit status $rc, expected $code"
while IFS= read -r re; do
    grep -Eq -- "$re" "$tmp/$stream" || say "$stream does not match: $re"
done <"$tmp/want"
while IFS= read -r re; do
    ! grep -Eq -- "$re" "$tmp/$stream" || say "$stream matches what it must not: $re"
done <"$tmp/reject"
if [ -n "$outdir" ] && [ -d "$outdir" ]; then
    # temporaries are hidden: .NAME.XXXXXX.partial
    for f in "$outdir"/* "$outdir"/.*.partial "$outdir"/checkpoints/.*.partial; do
        [ -e "$f" ] || continue
        case ${f##*/} in
        config.ini | metrics.jsonl | summary.json | weights.safetensors | *.partial)
            say "the failed run left $f behind" ;;
        esac
    done
fi
if [ "$fail" -ne 0 ]; then
    echo "--- command: $*" >&2
    echo "--- stdout:" >&2
    cat "$tmp/stdout" >&2
    echo "--- stderr:" >&2
    cat "$tmp/stderr" >&2
    exit 1
fi
exit 0
