# Sourced by run.sh and test.sh: installs the Debian packages amptrain needs
# when any is missing (non-interactive, idempotent). The CUDA toolkit is not
# installed here: the CUDA backend is built whenever nvcc is already present.
AMP_DEBIAN_PACKAGES="build-essential cmake pkg-config libinih-dev zlib1g-dev libopenblas-dev dataset-fashion-mnist"

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
