# shellcheck shell=bash
# Sourced by scripts/gpu-check.sh (bash): the Debian packages a bare GPU
# machine lacks, fetched here as .deb files and unpacked there into a prefix.
#
# The device machine runs the vendor's CUDA image (Ubuntu, nvcc, CMake,
# Python with PyTorch) with none of our Debian packages and no registry to
# install from. `gpu-check.sh --prepare` downloads the .deb files below on a
# Debian machine of ours; the folder travels with the device command; there
# `dpkg -x` unpacks them into a prefix under /tmp and the build finds
# everything through PKG_CONFIG_LIBDIR, CMAKE_PREFIX_PATH and LD_LIBRARY_PATH.
# `gpu-check.sh --rehearse` does the same here with the system's copies of
# these packages hidden, so a missing .deb shows up here and not there.

# The packages to fetch and unpack: build-time (-dev, pkg-config) and their
# run-time libraries, down to what the CUDA image has (AMP_GPU_IMAGE_HAS).
# To add one (libjansson-dev, OpenMPI's libopenmpi-dev and openmpi-bin, ...):
# append it and the libraries it depends on, then run --prepare: it checks
# that every dependency of every .deb is in one of the two lists.
AMP_GPU_DEBS="libinih-dev libinih1 libinireader0
  libjansson-dev libjansson4
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  libopenblas-dev libopenblas0 libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0
  zlib1g-dev zlib1g
  pkgconf-bin libpkgconf3"
# The rehearsal still hides the system's copies of every package above when
# a test narrows the list through AMP_GPU_DEBS_OVERRIDE.
AMP_GPU_DEBS_LISTED=$AMP_GPU_DEBS
[ -z "${AMP_GPU_DEBS_OVERRIDE:-}" ] || AMP_GPU_DEBS=$AMP_GPU_DEBS_OVERRIDE

# What the CUDA image already has (Ubuntu with the compilers): these satisfy
# dependencies and are never fetched. zlib1g is fetched all the same, since
# zlib1g-dev's libz.so points at this version's file.
AMP_GPU_IMAGE_HAS="libc6 libc6-dev libc-dev libgcc-s1 gcc-12-base libstdc++6 zlib1g"

# What the bare CUDA image lacks and no .deb brings: the rehearsal makes
# these absent (not stubbed: CMake's AUTO searches must come up empty, as
# there), so the build is the image's OpenBLAS-only, MPI-less one. Debian
# packages (the installed ones of the list) and the toolkit's own cuDNN and
# NCCL files (globs); the image has cuDNN only as a pip wheel, which the
# rehearsal fakes from the system's copy (amp_gpu_fake_cudnn_wheel).
AMP_GPU_HOST_LACKS="libdnnl-dev libdnnl2 libdnnl3 libopenmpi-dev libopenmpi3 openmpi-bin
  openmpi-common mpi-default-dev mpi-default-bin libnccl-dev libnccl2 nvidia-cudnn libcudnn9-dev-cuda-12
  libcudnn9-cuda-12 libcudnn9-dev-cuda-13 libcudnn9-cuda-13"
AMP_GPU_HOST_LACKS_GLOBS="/usr/local/cuda*/lib*/libcudnn* /usr/local/cuda*/lib*/libnccl*
  /usr/local/cuda*/targets/*/lib/libcudnn* /usr/local/cuda*/targets/*/lib/libnccl*
  /usr/local/cuda*/include/cudnn*.h /usr/local/cuda*/include/nccl*.h
  /usr/local/cuda*/targets/*/include/cudnn*.h /usr/local/cuda*/targets/*/include/nccl*.h
  /usr/local/include/cudnn*.h /usr/local/include/nccl*.h /usr/local/lib/libcudnn* /usr/local/lib/libnccl*"

# Never hidden by the rehearsal: the host's own compiler and CMake load them.
AMP_GPU_HOST_KEEP="zlib1g"

AMP_GPU_DEB_DIR_DEFAULT=.gpu-debs

amp_gpu_err() { echo "gpu-prefix: $*" >&2; }

# amp_gpu_deb_file DIR PKG: the one DIR/PKG_*.deb (apt-get download's names).
amp_gpu_deb_file() {
    local f n=0 found=
    for f in "$1/$2"_*.deb; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        found=$f
    done
    [ "$n" = 1 ] || return 1
    echo "$found"
}

# amp_gpu_check_debs DIR: every package of AMP_GPU_DEBS has exactly one .deb.
amp_gpu_check_debs() {
    local dir=$1 pkg missing=() dup=()
    for pkg in $AMP_GPU_DEBS; do
        if ! amp_gpu_deb_file "$dir" "$pkg" >/dev/null; then
            if ls "$dir/$pkg"_*.deb >/dev/null 2>&1; then dup+=("$pkg"); else missing+=("$pkg"); fi
        fi
    done
    if [ ${#missing[@]} -gt 0 ]; then
        amp_gpu_err "missing .deb for package(s): ${missing[*]} (no <package>_*.deb in $dir)."
        amp_gpu_err "Run scripts/gpu-check.sh --prepare on a Debian machine with apt, and carry $dir."
    fi
    [ ${#dup[@]} -eq 0 ] || amp_gpu_err "more than one .deb for: ${dup[*]} in $dir: run --prepare again"
    [ ${#missing[@]} -eq 0 ] && [ ${#dup[@]} -eq 0 ]
}

# amp_gpu_prepare DIR: downloads the .deb files into DIR (emptied of old
# ones first) and checks that their dependencies are closed.
amp_gpu_prepare() {
    local dir=$1 pkg
    command -v apt-get >/dev/null 2>&1 || { amp_gpu_err "--prepare needs apt-get (a Debian machine)"; return 1; }
    mkdir -p "$dir" || return 1
    rm -f "$dir"/*.deb
    # shellcheck disable=SC2086 # a list of package names
    if ! (cd "$dir" && apt-get download -q $AMP_GPU_DEBS); then
        if [ "$(id -u)" = 0 ]; then
            echo "apt-get download failed; refreshing the package lists and trying again"
            apt-get update -q || return 1
            # shellcheck disable=SC2086
            (cd "$dir" && apt-get download -q $AMP_GPU_DEBS) || return 1
        else
            amp_gpu_err "apt-get download failed (as root this runs apt-get update first)"
            return 1
        fi
    fi
    amp_gpu_check_debs "$dir" || return 1
    amp_gpu_check_closure "$dir" || return 1
    local bytes
    bytes=$(du -cb "$dir"/*.deb | tail -n 1 | cut -f1)
    echo "prepared $(echo $AMP_GPU_DEBS | wc -w) .deb files in $dir: $((bytes / 1024)) KiB"
}

# amp_gpu_check_closure DIR: every Depends/Pre-Depends of every .deb names a
# package of AMP_GPU_DEBS or AMP_GPU_IMAGE_HAS (or one a .deb Provides), in
# at least one of its alternatives.
amp_gpu_check_closure() {
    local dir=$1 pkg f have deps group alt name ok bad=0
    have=" $(echo $AMP_GPU_DEBS $AMP_GPU_IMAGE_HAS) "
    for pkg in $AMP_GPU_DEBS; do
        f=$(amp_gpu_deb_file "$dir" "$pkg") || return 1
        for name in $(dpkg-deb -f "$f" Provides | tr ',' '\n' | sed -E 's/\(.*\)//; s/:.*//'); do
            have="$have$name "
        done
    done
    for pkg in $AMP_GPU_DEBS; do
        f=$(amp_gpu_deb_file "$dir" "$pkg")
        deps=$(dpkg-deb -f "$f" Pre-Depends Depends | sed -E 's/^[A-Za-z-]+: //' | tr '\n' ',')
        while IFS= read -r group; do
            group=$(echo "$group" | sed -E 's/\([^)]*\)//g; s/:[a-z0-9]+//g; s/^ +| +$//g')
            [ -n "$group" ] || continue
            ok=0
            for alt in $(echo "$group" | tr '|' ' '); do
                case $have in *" $alt "*) ok=1 ;; esac
            done
            if [ "$ok" = 0 ]; then
                amp_gpu_err "$pkg depends on '$group', which is in neither AMP_GPU_DEBS nor AMP_GPU_IMAGE_HAS (scripts/gpu_prefix.sh)"
                bad=1
            fi
        done < <(echo "$deps" | tr ',' '\n')
    done
    return "$bad"
}

# amp_gpu_owner PATH: " (package NAME)" when this machine's dpkg knows
# which package installs PATH, else nothing.
amp_gpu_owner() {
    local o
    o=$(dpkg-query -S "$1" 2>/dev/null | head -n 1 | cut -d: -f1)
    [ -n "$o" ] && echo " (package $o)"
}

# amp_gpu_unpack DEB PREFIX: dpkg -x, or ar + tar where dpkg is missing.
amp_gpu_unpack() {
    if command -v dpkg-deb >/dev/null 2>&1; then
        dpkg-deb -x "$1" "$2"
        return
    fi
    local member
    member=$(ar t "$1" | grep '^data\.tar') || { amp_gpu_err "$1: no data.tar member"; return 1; }
    case $member in
    *.xz) ar p "$1" "$member" | tar -xJ -C "$2" ;;
    *.zst) ar p "$1" "$member" | zstd -dc | tar -x -C "$2" ;;
    *.gz) ar p "$1" "$member" | tar -xz -C "$2" ;;
    *) ar p "$1" "$member" | tar -x -C "$2" ;;
    esac
}

# amp_gpu_prefix DIR PREFIX: unpacks every .deb of AMP_GPU_DEBS from DIR
# into PREFIX (emptied first), points absolute symlinks into the prefix,
# rewrites the .pc files to the prefix, and exports the environment the
# build and the binaries need: PKG_CONFIG_LIBDIR (the prefix alone),
# PKG_CONFIG_PATH, PKG_CONFIG, CMAKE_PREFIX_PATH, PATH and LD_LIBRARY_PATH
# (prepended: the image's own entries, the driver's among them, stay).
amp_gpu_prefix() {
    local dir=$1 prefix=$2 pkg f l t bad=0
    amp_gpu_check_debs "$dir" || return 1
    case $prefix in /?*) ;; *) amp_gpu_err "the prefix must be an absolute path below /, not '$prefix'"; return 1 ;; esac
    rm -rf "$prefix" && mkdir -p "$prefix" || return 1
    for pkg in $AMP_GPU_DEBS; do
        f=$(amp_gpu_deb_file "$dir" "$pkg")
        amp_gpu_unpack "$f" "$prefix" || { amp_gpu_err "unpacking $f failed"; return 1; }
    done
    # Absolute links (zlib1g-dev's libz.so -> /lib/...) would point at the
    # machine's own files, which the device does not have.
    while IFS= read -r l; do
        t=$(readlink "$l")
        case $t in /*) ;; *) continue ;; esac
        case $l in "$prefix"/usr/share/*) continue ;; esac
        if [ -e "$prefix$t" ]; then
            ln -sfn "$prefix$t" "$l"
        else
            amp_gpu_err "$l -> $t: the prefix lacks the target$(amp_gpu_owner "$t") (the device has no such file): add its package to AMP_GPU_DEBS"
            bad=1
        fi
    done < <(find "$prefix" -type l)
    while IFS= read -r l; do
        case $l in "$prefix"/usr/share/*) continue ;; esac
        t=$(readlink -m "$l")
        amp_gpu_err "$l -> $(readlink "$l") points at nothing$(amp_gpu_owner "${t#"$prefix"}"): add its package to AMP_GPU_DEBS"
        bad=1
    done < <(find "$prefix" -xtype l)
    [ "$bad" = 0 ] || return 1
    local pcdirs libdirs
    while IFS= read -r f; do
        sed -i -E "s#(=|-I|-L)/usr(/|\$)#\\1$prefix/usr\\2#g" "$f"
    done < <(find "$prefix" -name '*.pc')
    pcdirs=$(find "$prefix" -name '*.pc' -printf '%h\n' | sort -u | paste -sd: -)
    libdirs=$(find "$prefix" \( -name '*.so' -o -name '*.so.*' \) -printf '%h\n' | sort -u | paste -sd: -)
    [ -x "$prefix/usr/bin/pkgconf" ] || { amp_gpu_err "no usr/bin/pkgconf in the prefix (package pkgconf-bin)"; return 1; }
    export AMP_GPU_PREFIX=$prefix
    export PKG_CONFIG_LIBDIR=$pcdirs PKG_CONFIG_PATH=$pcdirs PKG_CONFIG=$prefix/usr/bin/pkgconf
    unset PKG_CONFIG_SYSROOT_DIR
    export CMAKE_PREFIX_PATH=$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
    export PATH=$prefix/usr/bin:$PATH
    export AMP_GPU_LIBDIRS=$libdirs
    export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "prefix $prefix: $(echo $AMP_GPU_DEBS | wc -w) packages, $(du -sh "$prefix" | cut -f1)"
    echo "  PKG_CONFIG_LIBDIR=$PKG_CONFIG_LIBDIR"
    echo "  LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}

# The hidden files, "PATH<tab>PACKAGE" per line (amp_gpu_hide writes it);
# amp_gpu_explain reads it to name the package behind an error.
AMP_GPU_HIDDEN_MAP=

# amp_gpu_hide STUBDIR [--map-only]: in a private mount namespace (unshare
# -m, as root), covers every file that the system's copies of our packages
# installed (the list, and the full list when AMP_GPU_DEBS_OVERRIDE narrows
# it; not AMP_GPU_HOST_KEEP) with a stub that says so: a header becomes an
# #error, anything else a line of text. Sets AMP_GPU_HIDDEN_MAP. With
# --map-only it only writes the map (for the leak checks).
amp_gpu_hide() {
    local stubs=$1 map_only=${2:-} pkg path stub n=0
    mkdir -p "$stubs" || return 1
    AMP_GPU_HIDDEN_MAP=$stubs/hidden.tsv
    : >"$AMP_GPU_HIDDEN_MAP"
    for pkg in $(echo $AMP_GPU_DEBS $AMP_GPU_DEBS_LISTED | tr ' ' '\n' | sort -u); do
        case " $AMP_GPU_HOST_KEEP " in *" $pkg "*) continue ;; esac
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
        while IFS= read -r path; do
            case $path in /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/*) continue ;; esac
            [ -L "$path" ] || [ -f "$path" ] || continue
            printf '%s\t%s\n' "$path" "$pkg" >>"$AMP_GPU_HIDDEN_MAP"
            # A link is left alone: mount would follow it to its target,
            # which is either hidden here too or a kept package's file.
            [ -L "$path" ] || [ -n "$map_only" ] && continue
            case $path in
            *.h) stub=$stubs/$pkg.h
                 echo "#error \"hidden by gpu-check.sh --rehearse: $path belongs to the system package $pkg; the prefix must provide it (add $pkg to AMP_GPU_DEBS in scripts/gpu_prefix.sh)\"" >"$stub" ;;
            *) stub=$stubs/$pkg.txt
               echo "hidden by gpu-check.sh --rehearse: a file of the system package $pkg" >"$stub" ;;
            esac
            mount --bind "$stub" "$path" || return 1
            n=$((n + 1))
        done < <(dpkg-query -L "$pkg")
    done
    if [ -n "$map_only" ]; then
        echo "listed $(wc -l <"$AMP_GPU_HIDDEN_MAP") files of the system's copies of these packages (not hidden)"
    else
        echo "hid $n files of the system's copies of these packages (map: $AMP_GPU_HIDDEN_MAP)"
    fi
}

# amp_gpu_explain LOG: names the packages missing from AMP_GPU_DEBS whose
# hidden files LOG mentions (by full path, or a library, header or .pc by
# its file name) and says what to do.
amp_gpu_explain() {
    local log=$1 path pkg base found=()
    [ -n "$AMP_GPU_HIDDEN_MAP" ] && [ -s "$AMP_GPU_HIDDEN_MAP" ] || return 0
    while IFS=$'\t' read -r path pkg; do
        # A listed package is in the prefix; the same file name there is not it.
        case " $(echo $AMP_GPU_DEBS) " in *" $pkg "*) continue ;; esac
        base=${path##*/}
        case $base in *.so* | *.pc | *.h | pkgconf) ;; *) continue ;; esac
        if grep -qF -- "$path" "$log" ||
            grep -qE -- "(^|[^A-Za-z0-9_.-])$(printf '%s' "$base" | sed 's/[.[\*^$+?(){}|]/\\&/g')([^A-Za-z0-9_-]|$)" "$log" ||
            { [ "${base%.pc}" != "$base" ] && grep -qE -- "[Pp]ackage '?${base%.pc}'? (was )?not found|No package '${base%.pc}' found" "$log"; }; then
            case " ${found[*]} " in *" $pkg "*) ;; *) found+=("$pkg") ;; esac
        fi
    done <"$AMP_GPU_HIDDEN_MAP"
    [ ${#found[@]} -gt 0 ] || return 0
    amp_gpu_err "the failure above needed file(s) of the system package(s) ${found[*]}, which the prefix lacks:"
    amp_gpu_err "add ${found[*]} to AMP_GPU_DEBS in scripts/gpu_prefix.sh and run scripts/gpu-check.sh --prepare"
}

# amp_gpu_probe WORKDIR: compiles, links and runs a program against inih,
# OpenBLAS and zlib through the prefix's pkg-config: seconds, where a full
# build takes minutes, and it fails the same way when a package is missing.
amp_gpu_probe() {
    local w=$1 flags
    mkdir -p "$w" || return 1
    cat >"$w/probe.c" <<'EOF'
#include <cblas.h>
#include <ini.h>
#include <stdio.h>
#include <zlib.h>
static int on_key(void *u, const char *s, const char *k, const char *v) {
    (void)s; (void)k; (void)v;
    ++*(int *)u;
    return 1;
}
int main(void) {
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {0};
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    int keys = 0;
    int rc = ini_parse_string("[s]\nk = v\n", on_key, &keys);
    printf("probe: sgemm c[3] = %g, inih keys %d, zlib %s\n", c[3], keys, zlibVersion());
    return !(c[3] == 4.0f && rc == 0 && keys == 1 && zlibVersion()[0]);
}
EOF
    flags=$("$PKG_CONFIG" --cflags --libs inih openblas zlib) || return 1
    # shellcheck disable=SC2086 # a list of flags
    ${CC:-cc} -o "$w/probe" "$w/probe.c" $flags || return 1
    "$w/probe" || return 1
    amp_gpu_leaks "$w/probe" "" || return 1
}

# amp_gpu_leaks BINARY BUILD_DIR: fails, naming the package, when the binary
# loads a library of the hidden list from the system, or (BUILD_DIR given)
# when a compiler dependency file there names a hidden file. Where hiding
# worked these cannot happen; this catches the same where it did not.
amp_gpu_leaks() {
    local bin=$1 build=$2 used path pkg bad=0
    [ -n "$AMP_GPU_HIDDEN_MAP" ] && [ -s "$AMP_GPU_HIDDEN_MAP" ] || return 0
    used=$(ldd "$bin" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p')
    if [ -n "$build" ]; then
        used="$used
$(find "$build" -name '*.d' -exec cat {} + 2>/dev/null | tr ' \\' '\n\n' | grep '^/' | sort -u)"
    fi
    used=$(echo "$used" | grep '^/' | while IFS= read -r path; do readlink -f "$path"; done | sort -u)
    local seen=" "
    while IFS=$'\t' read -r path pkg; do
        path=$(readlink -f "$path")
        case $seen in *" $path "*) continue ;; esac
        seen="$seen$path "
        if echo "$used" | grep -qxF -- "$path"; then
            amp_gpu_err "$bin used $path from the system's package $pkg instead of the prefix: add $pkg to AMP_GPU_DEBS"
            bad=1
        fi
    done <"$AMP_GPU_HIDDEN_MAP"
    return "$bad"
}

# amp_gpu_lacked_files: the files of AMP_GPU_HOST_LACKS (installed packages)
# and AMP_GPU_HOST_LACKS_GLOBS, one per line, links included.
amp_gpu_lacked_files() {
    local pkg path
    for pkg in $AMP_GPU_HOST_LACKS; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
        dpkg-query -L "$pkg" | while IFS= read -r path; do
            [ -L "$path" ] || [ -f "$path" ] && echo "$path"
        done
    done
    for path in $AMP_GPU_HOST_LACKS_GLOBS; do
        [ -L "$path" ] || [ -f "$path" ] && echo "$path"
    done
    return 0
}

# amp_gpu_make_absent STUBDIR: in the private mount namespace, makes every
# file of amp_gpu_lacked_files absent: each library or header folder holding
# one is covered by a folder of links to its other entries (its original
# stays reachable under STUBDIR/orig, for amp_gpu_fake_cudnn_wheel); any
# other file (a program, a man page) by a stub. Deepest folders first, the
# originals bound recursively, so no cover hides another. Writes
# STUBDIR/absent.tsv (PATH<tab>ORIGINAL FOLDER) and prints a count.
amp_gpu_make_absent() {
    local stubs=$1 path dir n=0 k=0 orig farm e name
    mkdir -p "$stubs/orig" "$stubs/farm" || return 1
    : >"$stubs/absent.tsv"
    declare -A gone=()
    local dirs=()
    while IFS= read -r path; do
        dir=$(readlink -f "$(dirname "$path")")
        gone["$dir/${path##*/}"]=1
        case $dir in
        */lib | */lib/* | */lib64 | */lib64/* | */include | */include/*)
            case " ${dirs[*]} " in *" $dir "*) ;; *) dirs+=("$dir") ;; esac ;;
        *)
            if [ -f "$path" ] && [ ! -L "$path" ]; then
                echo "absent on the CUDA image: $path" >"$stubs/stub.txt"
                mount --bind "$stubs/stub.txt" "$path" || return 1
            fi ;;
        esac
        n=$((n + 1))
    done < <(amp_gpu_lacked_files)
    while IFS= read -r dir; do
        [ -n "$dir" ] || continue
        k=$((k + 1))
        orig=$stubs/orig/$k farm=$stubs/farm/$k
        mkdir -p "$orig" "$farm" || return 1
        mount --rbind "$dir" "$orig" || return 1
        for e in "$orig"/* "$orig"/.[!.]*; do
            [ -e "$e" ] || [ -L "$e" ] || continue
            name=${e##*/}
            if [ -n "${gone["$dir/$name"]:-}" ]; then
                printf '%s\t%s\n' "$dir/$name" "$orig" >>"$stubs/absent.tsv"
                continue
            fi
            ln -s "$e" "$farm/$name" || return 1
        done
        mount --bind "$farm" "$dir" || return 1
    done < <(printf '%s\n' "${dirs[@]}" | awk '{ print gsub("/", "/"), $0 }' | sort -rn | cut -d' ' -f2-)
    echo "made $n files of packages the CUDA image lacks absent ($AMP_GPU_HOST_LACKS_SUMMARY) in ${#dirs[@]} folders"
}
AMP_GPU_HOST_LACKS_SUMMARY="oneDNN, OpenMPI, NCCL, cuDNN"

# amp_gpu_fake_cudnn_wheel SITE [ABSENT_TSV]: the pip wheel's layout of
# cuDNN (SITE/nvidia/cudnn/lib/libcudnn*.so.<major>, no unversioned
# libcudnn.so; SITE/nvidia/cudnn/include) as links to the system's copy
# (its hidden original, per ABSENT_TSV, where the rehearsal made it absent).
# Prints the folder; Python finds it as nvidia.cudnn with SITE on PYTHONPATH.
amp_gpu_fake_cudnn_wheel() {
    local site=$1 tsv=${2:-} root=$1/nvidia/cudnn f path orig n=0
    rm -rf "$site/nvidia" && mkdir -p "$root/lib" "$root/include" || return 1
    local srcs=()
    if [ -n "$tsv" ] && [ -s "$tsv" ]; then
        while IFS=$'\t' read -r path orig; do srcs+=("$orig/${path##*/}"); done < <(grep -E '/(libcudnn[^/]*\.so\.[0-9]+|cudnn[^/]*\.h)'$'\t' "$tsv")
    else
        for f in $AMP_GPU_HOST_LACKS_GLOBS; do
            case ${f##*/} in libcudnn*.so.[0-9] | libcudnn*.so.[0-9][0-9] | cudnn*.h) srcs+=("$f") ;; esac
        done
    fi
    for f in "${srcs[@]}"; do
        [ -e "$f" ] || continue
        case ${f##*/} in
        *.h) [ -e "$root/include/${f##*/}" ] || ln -s "$f" "$root/include/" ;;
        *) [ -e "$root/lib/${f##*/}" ] || ln -s "$f" "$root/lib/" ;;
        esac
        n=$((n + 1))
    done
    [ -e "$root/lib/libcudnn.so.9" ] || [ -e "$root/lib/libcudnn.so.8" ] || {
        amp_gpu_err "no libcudnn.so.<major> on this machine to fake the wheel from"
        return 1
    }
    echo "$root"
}
