# expect CODE REGEX COMMAND...: runs COMMAND under `timeout 60` (a hang fails
# instead of stalling the suite) with its output in $W/log, and calls fail
# unless it exits with CODE and a line of its output (stdout and stderr)
# matches REGEX. Sourced (bash) by scripts that define W and fail.
expect() {
    local code=$1 re=$2
    shift 2
    # -k: a process stuck in a blocking open ignores SIGTERM
    timeout -k 10 60 "$@" >"$W/log" 2>&1
    local rc=$?
    [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "timed out (a blocking open or read?): $*"
    [ "$rc" = "$code" ] || fail "exit $rc (expected $code) from: $* -- $(tail -5 "$W/log")"
    grep -Eq -- "$re" "$W/log" || fail "output does not match '$re' for: $* -- $(tail -5 "$W/log")"
}
