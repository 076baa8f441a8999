# Sourced by the tokenizer test scripts (bash), run as SCRIPT AMPTRAIN WORK_DIR:
# A, W (emptied), the fixtures' folder D, the shipped CORPUS, and fail().
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../checkpoint/lib.sh"
A=$1 W=$2
D=$here/../data/tokenizer
CORPUS=$here/../../data/tinyshakespeare.txt
rm -rf "$W" && mkdir -p "$W" || exit 1
