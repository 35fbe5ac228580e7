# Sourced by the scripts that pack binaries for a machine without this one's libraries
# (scripts/device-carry.sh, scripts/device-fuzz.sh pack).

# carry_libs DEST BINARY...: copies every shared library ldd resolves for the BINARYs into DEST,
# except the C and C++ runtimes, which the target system provides.
carry_libs() {
  local dest=$1
  shift
  ldd "$@" | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dest/"; done
}
