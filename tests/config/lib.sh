# Helpers the config CLI tests share (sourced; bash).
# Usage of every script: SCRIPT AMPTRAIN WORK_DIR
. "$(dirname "${BASH_SOURCE[0]}")/../checkpoint/lib.sh" # fail

A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

. "$TESTS/expect.sh"

# ini NAME: writes stdin to $W/NAME.ini and prints its path.
ini() {
    cat >"$W/$1.ini" && echo "$W/$1.ini"
}
