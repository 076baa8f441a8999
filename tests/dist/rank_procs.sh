# Finding and watching an mpirun job's rank processes (sourced; bash), for
# the tests that kill one rank: tests/dist/kill.sh, tests/ab/ranks_check.sh.

# rank_pids MPIRUN_PID: R0 and R1 become the pids of ranks 0 and 1 (the
# children of that mpirun whose environment says which rank they are).
rank_pids() {
    R0= R1=
    local c env
    for c in $(pgrep -P "$1"); do
        env=$(tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null)
        case $env in *OMPI_COMM_WORLD_RANK=1*) R1=$c ;; *OMPI_COMM_WORLD_RANK=0*) R0=$c ;; esac
    done
}

# wait_end PID TENTHS: waits up to TENTHS tenths of a second for this
# shell's child PID to end; RC becomes its exit status ('' while it runs).
wait_end() {
    RC=
    local i
    for i in $(seq 1 "$2"); do
        if ! kill -0 "$1" 2>/dev/null; then
            wait "$1"
            RC=$?
            return
        fi
        sleep 0.1
    done
}

# alive PID: the process exists and is not a zombie waiting to be reaped.
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
