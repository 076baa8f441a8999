#!/bin/sh
# cuda_link_check.sh BUILD_DIR CMAKE TOOLKIT_LIBDIR
# How a CUDA build finds its CUDA libraries (docs/performance.md "Linking"):
# the CUDA backend's module, libamptrain_cuda.so (beside amptrain, and in
# <libdir>/amptrain once installed), links ONE CUDA runtime, the shared
# libcudart (no cudart_static copied in beside it), and carries a RUNPATH
# naming the toolkit's library folder, in the build tree and after
# `cmake --install`, so libcudart and cuBLAS load with no LD_LIBRARY_PATH;
# amptrain itself links no CUDA library (a CPU run maps none:
# docs/performance-threads.md); no RUNPATH has an empty entry. Needs no GPU.
# POSIX sh; binutils' nm and readelf.
set -u
[ $# -eq 3 ] || { echo "usage: cuda_link_check.sh BUILD_DIR CMAKE TOOLKIT_LIBDIR" >&2; exit 2; }
build=$1 cmake=$2 libdir=$3
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuda_link.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; echo "FAIL: cmake --install failed" >&2; exit 1; }

# The link command itself (Makefiles or Ninja) must not name cudart_static:
# CMake adds it for nvcc-linked targets unless CMAKE_CUDA_RUNTIME_LIBRARY says
# Shared, and then both runtimes end up in one binary.
for f in "$build/core/CMakeFiles/amptrain.dir/link.txt" \
         "$build/core/CMakeFiles/amptrain.dir/linkLibs.rsp" "$build/build.ninja"; do
    [ -f "$f" ] && grep -q cudart_static "$f" && bad "$f links cudart_static beside the shared libcudart"
done

for bin in "$build/amptrain" "$tmp/prefix/bin/amptrain"; do
    [ -x "$bin" ] || { bad "$bin is missing"; continue; }
    need=$(readelf -d "$bin" | sed -n 's/.*NEEDED.*\[\(lib\(cudart\|cublas\|cudnn\|nccl\)[^]]*\)\]/\1/p' | tr '\n' ' ')
    [ -z "$need" ] && echo "ok  $bin links no CUDA library" || bad "$bin links CUDA libraries itself: $need"
done

for bin in "$build/libamptrain_cuda.so" $(find "$tmp/prefix" -name libamptrain_cuda.so); do
    [ -f "$bin" ] || { bad "$bin is missing"; continue; }
    dyn=$(readelf -d "$bin")
    echo "$dyn" | grep -Eq 'NEEDED.*\[libcudart\.so\.[0-9]+\]' ||
        bad "$bin does not load the shared libcudart (NEEDED: $(echo "$dyn" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' '))"
    echo "$dyn" | grep -Eq 'NEEDED.*\[libcublas\.so\.[0-9]+\]' || bad "$bin does not load libcublas"
    # A static cudart would define the runtime API in the binary itself.
    if nm "$bin" 2>/dev/null | grep -Eq ' [TtWw] cudaGetDeviceCount$'; then
        bad "$bin defines cudaGetDeviceCount itself: a static cudart is linked in too"
    fi
    runpath=$(echo "$dyn" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    [ -n "$runpath" ] || bad "$bin has no RUNPATH$(echo "$dyn" | grep -q '(RPATH)' && echo ' (an old-style RPATH instead)')"
    case ":$runpath:" in
    *":$libdir:"*) ;;
    *) bad "$bin: RUNPATH '$runpath' does not name the toolkit's library folder $libdir" ;;
    esac
    # The loader finds them there with no LD_LIBRARY_PATH (ldd prints what
    # it resolves; a missing one reads "not found").
    libs=$(env -u LD_LIBRARY_PATH ldd "$bin" 2>&1)
    for lib in libcudart libcublas; do
        echo "$libs" | grep -E "^[[:space:]]*$lib\.so" | grep -q "not found" && bad "$bin: $lib not found without LD_LIBRARY_PATH"
    done
    [ "$fail" = 0 ] && echo "ok  $bin: shared libcudart + libcublas, RUNPATH $runpath"
done

# No RUNPATH (amptrain, the built-in plugins; build tree and installed) has
# an empty entry: ld.so reads one as the current directory, so a library in
# whatever folder amptrain is started from would be loaded.
for bin in "$build/amptrain" "$tmp/prefix/bin/amptrain" "$build"/plugins/*.so "$build/libamptrain_cuda.so" \
           $(find "$tmp/prefix" -name 'amp_*.so' -o -name libamptrain_cuda.so); do
    runpath=$(readelf -d "$bin" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    case ":$runpath:" in
    *::*) bad "$bin: RUNPATH '$runpath' has an empty entry (the current directory)" ;;
    *) echo "ok  $bin: RUNPATH '$runpath' has no empty entry" ;;
    esac
done
exit "$fail"
