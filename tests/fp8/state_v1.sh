#!/bin/bash
# A checkpoint whose FP8 state is section SCLD version 1 (written before the
# gradients' amaxes were kept unscaled) still resumes, with a warning that
# its gradient amaxes are in loss-scaled units; under no loss scale (the
# units agree) the resumed run ends as the uninterrupted one. A version-2
# checkpoint resumes without the warning; an unknown version is refused.
# The version-1 file is a version-2 one with the section's magic rewritten
# and its CRCs (the section's, the header's) recomputed.
# usage: state_v1.sh AMPTRAIN CONFIG WORK_DIR
. "$(dirname "$0")/lib.sh"
SETS=(--set precision.amax_history_len=4 --set train.steps=6 --set train.checkpoint_every=3
      --set train.keep=100)
WARN="FP8 state holds the gradients' amaxes in loss-scaled units"
run whole "${SETS[@]}"
ck=$W/whole/checkpoints/ckpt-00000003.amp
[ -f "$ck" ] || fail "no checkpoint at step 3"
# magic FILE OUT MAGIC: FILE with SCLD's first 8 bytes set to MAGIC
magic() {
    python3 - "$1" "$2" "$3" <<'PY'
import struct, sys, zlib
b = bytearray(open(sys.argv[1], "rb").read())
count = struct.unpack_from("<I", b, 12)[0]
for i in range(count):
    e = 32 + 24 * i
    if b[e:e + 4] == b"SCLD":
        off, n = struct.unpack_from("<QQ", b, e + 8)
        assert b[off:off + 7] == b"AMPSCLD", bytes(b[off:off + 8])
        b[off:off + 8] = sys.argv[3].encode()
        struct.pack_into("<I", b, e + 4, zlib.crc32(bytes(b[off:off + n])))
        break
else:
    sys.exit("no SCLD section")
struct.pack_into("<I", b, 24, zlib.crc32(bytes(b[32:32 + 24 * count]), zlib.crc32(bytes(b[:24]))))
open(sys.argv[2], "wb").write(b)
PY
}
resume() { # NAME MAGIC: resumes a copy of the step-3 checkpoint, its SCLD magic set to MAGIC
    mkdir -p "$W/$1/checkpoints" && cp "$W/whole/metrics.jsonl" "$W/$1/" || exit 1
    magic "$ck" "$W/$1/checkpoints/ckpt-00000003.amp" "$2" || fail "$1: could not rewrite $ck"
    "$A" train "$CFG" --set run.device=cpu "${SETS[@]}" --resume "$W/$1" 2>"$W/$1.log"
}
resume v2 AMPSCLD2 || fail "v2: $(tail -3 "$W/v2.log")"
grep -q "$WARN" "$W/v2.log" && fail "v2: warned: $(grep "$WARN" "$W/v2.log")"
resume v1 AMPSCLD1 || fail "v1: $(tail -3 "$W/v1.log")"
grep -q "$WARN" "$W/v1.log" || fail "v1: no warning: $(tail -3 "$W/v1.log")"
for r in v1 v2; do
    cmp -s "$W/whole/weights.safetensors" "$W/$r/weights.safetensors" ||
        fail "$r: the resumed run ends with other weights"
done
resume v9 AMPSCLD9 && fail "v9: resumed"
grep -q "section SCLD: not a scaled-operand state" "$W/v9.log" || fail "v9: $(tail -3 "$W/v9.log")"
echo "resumed: SCLD v2 silently, v1 with the warning, both as the whole run; v9 refused"
