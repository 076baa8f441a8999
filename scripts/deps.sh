# Sourced by run.sh and test.sh: installs the Debian packages amptrain needs
# when any is missing (non-interactive, idempotent). The CUDA toolkit is not
# installed here: the CUDA backend is built whenever nvcc is already present.
# OpenMPI (libopenmpi-dev, openmpi-bin) builds and tests data-parallel training.
AMP_DEBIAN_PACKAGES="build-essential cmake pkg-config libinih-dev libjansson-dev libpcre2-dev zlib1g-dev libopenblas-dev libdnnl-dev dataset-fashion-mnist libopenmpi-dev openmpi-bin"

amp_install_deps() {
    local missing=() pkg
    for pkg in $AMP_DEBIAN_PACKAGES "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$pkg")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

amp_build() {
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
    cmake --build build -j"$(nproc)"
}

# Whether ctest, given these arguments, would run the `browser` test
# (ab_report_browser): no when -LE/--label-exclude or -E/--exclude names
# browser, or when -R/--tests-regex or -L/--label selects tests and none of
# them is it. Only the forms "-X value" are understood; anything else means yes.
amp_tests_want_browser() {
    local want=1 sel=0 hit=0
    while [ $# -gt 0 ]; do
        case $1 in
        -LE | --label-exclude | -E | --exclude)
            case ${2:-} in *browser*) want=0 ;; esac; shift ;;
        -L | --label-regex | -R | --tests-regex)
            sel=1
            if printf 'ab_report_browser\nbrowser\nab\n' | grep -Eq -- "${2:-}"; then hit=1; fi
            shift ;;
        esac
        shift
    done
    [ "$want" -eq 1 ] && { [ "$sel" -eq 0 ] || [ "$hit" -eq 1 ]; }
}
